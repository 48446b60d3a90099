// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AcquireRequest as _warden_v1_AcquireRequest, AcquireRequest__Output as _warden_v1_AcquireRequest__Output } from '../../warden/v1/AcquireRequest.js';
import type { AcquireResponse as _warden_v1_AcquireResponse, AcquireResponse__Output as _warden_v1_AcquireResponse__Output } from '../../warden/v1/AcquireResponse.js';
import type { CallRequest as _warden_v1_CallRequest, CallRequest__Output as _warden_v1_CallRequest__Output } from '../../warden/v1/CallRequest.js';
import type { CallResponse as _warden_v1_CallResponse, CallResponse__Output as _warden_v1_CallResponse__Output } from '../../warden/v1/CallResponse.js';
import type { CancelWaitRequest as _warden_v1_CancelWaitRequest, CancelWaitRequest__Output as _warden_v1_CancelWaitRequest__Output } from '../../warden/v1/CancelWaitRequest.js';
import type { CancelWaitResponse as _warden_v1_CancelWaitResponse, CancelWaitResponse__Output as _warden_v1_CancelWaitResponse__Output } from '../../warden/v1/CancelWaitResponse.js';
import type { ClusterStatusRequest as _warden_v1_ClusterStatusRequest, ClusterStatusRequest__Output as _warden_v1_ClusterStatusRequest__Output } from '../../warden/v1/ClusterStatusRequest.js';
import type { ClusterStatusResponse as _warden_v1_ClusterStatusResponse, ClusterStatusResponse__Output as _warden_v1_ClusterStatusResponse__Output } from '../../warden/v1/ClusterStatusResponse.js';
import type { LeaseRevokeRequest as _warden_v1_LeaseRevokeRequest, LeaseRevokeRequest__Output as _warden_v1_LeaseRevokeRequest__Output } from '../../warden/v1/LeaseRevokeRequest.js';
import type { LeaseRevokeResponse as _warden_v1_LeaseRevokeResponse, LeaseRevokeResponse__Output as _warden_v1_LeaseRevokeResponse__Output } from '../../warden/v1/LeaseRevokeResponse.js';
import type { ProclaimRequest as _warden_v1_ProclaimRequest, ProclaimRequest__Output as _warden_v1_ProclaimRequest__Output } from '../../warden/v1/ProclaimRequest.js';
import type { ProclaimResponse as _warden_v1_ProclaimResponse, ProclaimResponse__Output as _warden_v1_ProclaimResponse__Output } from '../../warden/v1/ProclaimResponse.js';
import type { ReleaseRequest as _warden_v1_ReleaseRequest, ReleaseRequest__Output as _warden_v1_ReleaseRequest__Output } from '../../warden/v1/ReleaseRequest.js';
import type { ReleaseResponse as _warden_v1_ReleaseResponse, ReleaseResponse__Output as _warden_v1_ReleaseResponse__Output } from '../../warden/v1/ReleaseResponse.js';
import type { RenewRequest as _warden_v1_RenewRequest, RenewRequest__Output as _warden_v1_RenewRequest__Output } from '../../warden/v1/RenewRequest.js';
import type { RenewResponse as _warden_v1_RenewResponse, RenewResponse__Output as _warden_v1_RenewResponse__Output } from '../../warden/v1/RenewResponse.js';
import type { StatusRequest as _warden_v1_StatusRequest, StatusRequest__Output as _warden_v1_StatusRequest__Output } from '../../warden/v1/StatusRequest.js';
import type { StatusResponse as _warden_v1_StatusResponse, StatusResponse__Output as _warden_v1_StatusResponse__Output } from '../../warden/v1/StatusResponse.js';
import type { ValidateRequest as _warden_v1_ValidateRequest, ValidateRequest__Output as _warden_v1_ValidateRequest__Output } from '../../warden/v1/ValidateRequest.js';
import type { ValidateResponse as _warden_v1_ValidateResponse, ValidateResponse__Output as _warden_v1_ValidateResponse__Output } from '../../warden/v1/ValidateResponse.js';

export interface LockClient extends grpc.Client {
  Acquire(argument: _warden_v1_AcquireRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_warden_v1_AcquireResponse__Output>;
  Acquire(argument: _warden_v1_AcquireRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_warden_v1_AcquireResponse__Output>;
  acquire(argument: _warden_v1_AcquireRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_warden_v1_AcquireResponse__Output>;
  acquire(argument: _warden_v1_AcquireRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_warden_v1_AcquireResponse__Output>;
  
  Calls(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_warden_v1_CallRequest, _warden_v1_CallResponse__Output>;
  Calls(options?: grpc.CallOptions): grpc.ClientDuplexStream<_warden_v1_CallRequest, _warden_v1_CallResponse__Output>;
  calls(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_warden_v1_CallRequest, _warden_v1_CallResponse__Output>;
  calls(options?: grpc.CallOptions): grpc.ClientDuplexStream<_warden_v1_CallRequest, _warden_v1_CallResponse__Output>;
  
  CancelWait(argument: _warden_v1_CancelWaitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_CancelWaitResponse__Output>): grpc.ClientUnaryCall;
  CancelWait(argument: _warden_v1_CancelWaitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_CancelWaitResponse__Output>): grpc.ClientUnaryCall;
  CancelWait(argument: _warden_v1_CancelWaitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_CancelWaitResponse__Output>): grpc.ClientUnaryCall;
  CancelWait(argument: _warden_v1_CancelWaitRequest, callback: grpc.requestCallback<_warden_v1_CancelWaitResponse__Output>): grpc.ClientUnaryCall;
  cancelWait(argument: _warden_v1_CancelWaitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_CancelWaitResponse__Output>): grpc.ClientUnaryCall;
  cancelWait(argument: _warden_v1_CancelWaitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_CancelWaitResponse__Output>): grpc.ClientUnaryCall;
  cancelWait(argument: _warden_v1_CancelWaitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_CancelWaitResponse__Output>): grpc.ClientUnaryCall;
  cancelWait(argument: _warden_v1_CancelWaitRequest, callback: grpc.requestCallback<_warden_v1_CancelWaitResponse__Output>): grpc.ClientUnaryCall;
  
  ClusterStatus(argument: _warden_v1_ClusterStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  ClusterStatus(argument: _warden_v1_ClusterStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  ClusterStatus(argument: _warden_v1_ClusterStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  ClusterStatus(argument: _warden_v1_ClusterStatusRequest, callback: grpc.requestCallback<_warden_v1_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  clusterStatus(argument: _warden_v1_ClusterStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  clusterStatus(argument: _warden_v1_ClusterStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  clusterStatus(argument: _warden_v1_ClusterStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  clusterStatus(argument: _warden_v1_ClusterStatusRequest, callback: grpc.requestCallback<_warden_v1_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  
  LeaseRevoke(argument: _warden_v1_LeaseRevokeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_LeaseRevokeResponse__Output>): grpc.ClientUnaryCall;
  LeaseRevoke(argument: _warden_v1_LeaseRevokeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_LeaseRevokeResponse__Output>): grpc.ClientUnaryCall;
  LeaseRevoke(argument: _warden_v1_LeaseRevokeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_LeaseRevokeResponse__Output>): grpc.ClientUnaryCall;
  LeaseRevoke(argument: _warden_v1_LeaseRevokeRequest, callback: grpc.requestCallback<_warden_v1_LeaseRevokeResponse__Output>): grpc.ClientUnaryCall;
  leaseRevoke(argument: _warden_v1_LeaseRevokeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_LeaseRevokeResponse__Output>): grpc.ClientUnaryCall;
  leaseRevoke(argument: _warden_v1_LeaseRevokeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_LeaseRevokeResponse__Output>): grpc.ClientUnaryCall;
  leaseRevoke(argument: _warden_v1_LeaseRevokeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_LeaseRevokeResponse__Output>): grpc.ClientUnaryCall;
  leaseRevoke(argument: _warden_v1_LeaseRevokeRequest, callback: grpc.requestCallback<_warden_v1_LeaseRevokeResponse__Output>): grpc.ClientUnaryCall;
  
  Proclaim(argument: _warden_v1_ProclaimRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ProclaimResponse__Output>): grpc.ClientUnaryCall;
  Proclaim(argument: _warden_v1_ProclaimRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ProclaimResponse__Output>): grpc.ClientUnaryCall;
  Proclaim(argument: _warden_v1_ProclaimRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ProclaimResponse__Output>): grpc.ClientUnaryCall;
  Proclaim(argument: _warden_v1_ProclaimRequest, callback: grpc.requestCallback<_warden_v1_ProclaimResponse__Output>): grpc.ClientUnaryCall;
  proclaim(argument: _warden_v1_ProclaimRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ProclaimResponse__Output>): grpc.ClientUnaryCall;
  proclaim(argument: _warden_v1_ProclaimRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ProclaimResponse__Output>): grpc.ClientUnaryCall;
  proclaim(argument: _warden_v1_ProclaimRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ProclaimResponse__Output>): grpc.ClientUnaryCall;
  proclaim(argument: _warden_v1_ProclaimRequest, callback: grpc.requestCallback<_warden_v1_ProclaimResponse__Output>): grpc.ClientUnaryCall;
  
  Release(argument: _warden_v1_ReleaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  Release(argument: _warden_v1_ReleaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  Release(argument: _warden_v1_ReleaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  Release(argument: _warden_v1_ReleaseRequest, callback: grpc.requestCallback<_warden_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  release(argument: _warden_v1_ReleaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  release(argument: _warden_v1_ReleaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  release(argument: _warden_v1_ReleaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  release(argument: _warden_v1_ReleaseRequest, callback: grpc.requestCallback<_warden_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  
  Renew(argument: _warden_v1_RenewRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_RenewResponse__Output>): grpc.ClientUnaryCall;
  Renew(argument: _warden_v1_RenewRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_RenewResponse__Output>): grpc.ClientUnaryCall;
  Renew(argument: _warden_v1_RenewRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_RenewResponse__Output>): grpc.ClientUnaryCall;
  Renew(argument: _warden_v1_RenewRequest, callback: grpc.requestCallback<_warden_v1_RenewResponse__Output>): grpc.ClientUnaryCall;
  renew(argument: _warden_v1_RenewRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_RenewResponse__Output>): grpc.ClientUnaryCall;
  renew(argument: _warden_v1_RenewRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_RenewResponse__Output>): grpc.ClientUnaryCall;
  renew(argument: _warden_v1_RenewRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_RenewResponse__Output>): grpc.ClientUnaryCall;
  renew(argument: _warden_v1_RenewRequest, callback: grpc.requestCallback<_warden_v1_RenewResponse__Output>): grpc.ClientUnaryCall;
  
  Status(argument: _warden_v1_StatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  Status(argument: _warden_v1_StatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  Status(argument: _warden_v1_StatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  Status(argument: _warden_v1_StatusRequest, callback: grpc.requestCallback<_warden_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  status(argument: _warden_v1_StatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  status(argument: _warden_v1_StatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  status(argument: _warden_v1_StatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  status(argument: _warden_v1_StatusRequest, callback: grpc.requestCallback<_warden_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  
  Validate(argument: _warden_v1_ValidateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ValidateResponse__Output>): grpc.ClientUnaryCall;
  Validate(argument: _warden_v1_ValidateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ValidateResponse__Output>): grpc.ClientUnaryCall;
  Validate(argument: _warden_v1_ValidateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ValidateResponse__Output>): grpc.ClientUnaryCall;
  Validate(argument: _warden_v1_ValidateRequest, callback: grpc.requestCallback<_warden_v1_ValidateResponse__Output>): grpc.ClientUnaryCall;
  validate(argument: _warden_v1_ValidateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ValidateResponse__Output>): grpc.ClientUnaryCall;
  validate(argument: _warden_v1_ValidateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ValidateResponse__Output>): grpc.ClientUnaryCall;
  validate(argument: _warden_v1_ValidateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ValidateResponse__Output>): grpc.ClientUnaryCall;
  validate(argument: _warden_v1_ValidateRequest, callback: grpc.requestCallback<_warden_v1_ValidateResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface LockHandlers extends grpc.UntypedServiceImplementation {
  Acquire: grpc.handleServerStreamingCall<_warden_v1_AcquireRequest__Output, _warden_v1_AcquireResponse>;
  
  Calls: grpc.handleBidiStreamingCall<_warden_v1_CallRequest__Output, _warden_v1_CallResponse>;
  
  CancelWait: grpc.handleUnaryCall<_warden_v1_CancelWaitRequest__Output, _warden_v1_CancelWaitResponse>;
  
  ClusterStatus: grpc.handleUnaryCall<_warden_v1_ClusterStatusRequest__Output, _warden_v1_ClusterStatusResponse>;
  
  LeaseRevoke: grpc.handleUnaryCall<_warden_v1_LeaseRevokeRequest__Output, _warden_v1_LeaseRevokeResponse>;
  
  Proclaim: grpc.handleUnaryCall<_warden_v1_ProclaimRequest__Output, _warden_v1_ProclaimResponse>;
  
  Release: grpc.handleUnaryCall<_warden_v1_ReleaseRequest__Output, _warden_v1_ReleaseResponse>;
  
  Renew: grpc.handleUnaryCall<_warden_v1_RenewRequest__Output, _warden_v1_RenewResponse>;
  
  Status: grpc.handleUnaryCall<_warden_v1_StatusRequest__Output, _warden_v1_StatusResponse>;
  
  Validate: grpc.handleUnaryCall<_warden_v1_ValidateRequest__Output, _warden_v1_ValidateResponse>;
  
}

export interface LockDefinition extends grpc.ServiceDefinition {
  Acquire: MethodDefinition<_warden_v1_AcquireRequest, _warden_v1_AcquireResponse, _warden_v1_AcquireRequest__Output, _warden_v1_AcquireResponse__Output>
  Calls: MethodDefinition<_warden_v1_CallRequest, _warden_v1_CallResponse, _warden_v1_CallRequest__Output, _warden_v1_CallResponse__Output>
  CancelWait: MethodDefinition<_warden_v1_CancelWaitRequest, _warden_v1_CancelWaitResponse, _warden_v1_CancelWaitRequest__Output, _warden_v1_CancelWaitResponse__Output>
  ClusterStatus: MethodDefinition<_warden_v1_ClusterStatusRequest, _warden_v1_ClusterStatusResponse, _warden_v1_ClusterStatusRequest__Output, _warden_v1_ClusterStatusResponse__Output>
  LeaseRevoke: MethodDefinition<_warden_v1_LeaseRevokeRequest, _warden_v1_LeaseRevokeResponse, _warden_v1_LeaseRevokeRequest__Output, _warden_v1_LeaseRevokeResponse__Output>
  Proclaim: MethodDefinition<_warden_v1_ProclaimRequest, _warden_v1_ProclaimResponse, _warden_v1_ProclaimRequest__Output, _warden_v1_ProclaimResponse__Output>
  Release: MethodDefinition<_warden_v1_ReleaseRequest, _warden_v1_ReleaseResponse, _warden_v1_ReleaseRequest__Output, _warden_v1_ReleaseResponse__Output>
  Renew: MethodDefinition<_warden_v1_RenewRequest, _warden_v1_RenewResponse, _warden_v1_RenewRequest__Output, _warden_v1_RenewResponse__Output>
  Status: MethodDefinition<_warden_v1_StatusRequest, _warden_v1_StatusResponse, _warden_v1_StatusRequest__Output, _warden_v1_StatusResponse__Output>
  Validate: MethodDefinition<_warden_v1_ValidateRequest, _warden_v1_ValidateResponse, _warden_v1_ValidateRequest__Output, _warden_v1_ValidateResponse__Output>
}
