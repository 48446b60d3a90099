// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { LeaseGrantRequest as _warden_v1_LeaseGrantRequest, LeaseGrantRequest__Output as _warden_v1_LeaseGrantRequest__Output } from '../../warden/v1/LeaseGrantRequest.js';
import type { LeaseGrantResponse as _warden_v1_LeaseGrantResponse, LeaseGrantResponse__Output as _warden_v1_LeaseGrantResponse__Output } from '../../warden/v1/LeaseGrantResponse.js';
import type { LeaseKeepAliveRequest as _warden_v1_LeaseKeepAliveRequest, LeaseKeepAliveRequest__Output as _warden_v1_LeaseKeepAliveRequest__Output } from '../../warden/v1/LeaseKeepAliveRequest.js';
import type { LeaseKeepAliveResponse as _warden_v1_LeaseKeepAliveResponse, LeaseKeepAliveResponse__Output as _warden_v1_LeaseKeepAliveResponse__Output } from '../../warden/v1/LeaseKeepAliveResponse.js';
import type { LeaseTimeToLiveRequest as _warden_v1_LeaseTimeToLiveRequest, LeaseTimeToLiveRequest__Output as _warden_v1_LeaseTimeToLiveRequest__Output } from '../../warden/v1/LeaseTimeToLiveRequest.js';
import type { LeaseTimeToLiveResponse as _warden_v1_LeaseTimeToLiveResponse, LeaseTimeToLiveResponse__Output as _warden_v1_LeaseTimeToLiveResponse__Output } from '../../warden/v1/LeaseTimeToLiveResponse.js';

export interface LeaseClient extends grpc.Client {
  LeaseGrant(argument: _warden_v1_LeaseGrantRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_LeaseGrantResponse__Output>): grpc.ClientUnaryCall;
  LeaseGrant(argument: _warden_v1_LeaseGrantRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_LeaseGrantResponse__Output>): grpc.ClientUnaryCall;
  LeaseGrant(argument: _warden_v1_LeaseGrantRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_LeaseGrantResponse__Output>): grpc.ClientUnaryCall;
  LeaseGrant(argument: _warden_v1_LeaseGrantRequest, callback: grpc.requestCallback<_warden_v1_LeaseGrantResponse__Output>): grpc.ClientUnaryCall;
  leaseGrant(argument: _warden_v1_LeaseGrantRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_LeaseGrantResponse__Output>): grpc.ClientUnaryCall;
  leaseGrant(argument: _warden_v1_LeaseGrantRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_LeaseGrantResponse__Output>): grpc.ClientUnaryCall;
  leaseGrant(argument: _warden_v1_LeaseGrantRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_LeaseGrantResponse__Output>): grpc.ClientUnaryCall;
  leaseGrant(argument: _warden_v1_LeaseGrantRequest, callback: grpc.requestCallback<_warden_v1_LeaseGrantResponse__Output>): grpc.ClientUnaryCall;
  
  LeaseKeepAlive(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_warden_v1_LeaseKeepAliveRequest, _warden_v1_LeaseKeepAliveResponse__Output>;
  LeaseKeepAlive(options?: grpc.CallOptions): grpc.ClientDuplexStream<_warden_v1_LeaseKeepAliveRequest, _warden_v1_LeaseKeepAliveResponse__Output>;
  leaseKeepAlive(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_warden_v1_LeaseKeepAliveRequest, _warden_v1_LeaseKeepAliveResponse__Output>;
  leaseKeepAlive(options?: grpc.CallOptions): grpc.ClientDuplexStream<_warden_v1_LeaseKeepAliveRequest, _warden_v1_LeaseKeepAliveResponse__Output>;
  
  LeaseTimeToLive(argument: _warden_v1_LeaseTimeToLiveRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_LeaseTimeToLiveResponse__Output>): grpc.ClientUnaryCall;
  LeaseTimeToLive(argument: _warden_v1_LeaseTimeToLiveRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_LeaseTimeToLiveResponse__Output>): grpc.ClientUnaryCall;
  LeaseTimeToLive(argument: _warden_v1_LeaseTimeToLiveRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_LeaseTimeToLiveResponse__Output>): grpc.ClientUnaryCall;
  LeaseTimeToLive(argument: _warden_v1_LeaseTimeToLiveRequest, callback: grpc.requestCallback<_warden_v1_LeaseTimeToLiveResponse__Output>): grpc.ClientUnaryCall;
  leaseTimeToLive(argument: _warden_v1_LeaseTimeToLiveRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_LeaseTimeToLiveResponse__Output>): grpc.ClientUnaryCall;
  leaseTimeToLive(argument: _warden_v1_LeaseTimeToLiveRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_LeaseTimeToLiveResponse__Output>): grpc.ClientUnaryCall;
  leaseTimeToLive(argument: _warden_v1_LeaseTimeToLiveRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_LeaseTimeToLiveResponse__Output>): grpc.ClientUnaryCall;
  leaseTimeToLive(argument: _warden_v1_LeaseTimeToLiveRequest, callback: grpc.requestCallback<_warden_v1_LeaseTimeToLiveResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface LeaseHandlers extends grpc.UntypedServiceImplementation {
  LeaseGrant: grpc.handleUnaryCall<_warden_v1_LeaseGrantRequest__Output, _warden_v1_LeaseGrantResponse>;
  
  LeaseKeepAlive: grpc.handleBidiStreamingCall<_warden_v1_LeaseKeepAliveRequest__Output, _warden_v1_LeaseKeepAliveResponse>;
  
  LeaseTimeToLive: grpc.handleUnaryCall<_warden_v1_LeaseTimeToLiveRequest__Output, _warden_v1_LeaseTimeToLiveResponse>;
  
}

export interface LeaseDefinition extends grpc.ServiceDefinition {
  LeaseGrant: MethodDefinition<_warden_v1_LeaseGrantRequest, _warden_v1_LeaseGrantResponse, _warden_v1_LeaseGrantRequest__Output, _warden_v1_LeaseGrantResponse__Output>
  LeaseKeepAlive: MethodDefinition<_warden_v1_LeaseKeepAliveRequest, _warden_v1_LeaseKeepAliveResponse, _warden_v1_LeaseKeepAliveRequest__Output, _warden_v1_LeaseKeepAliveResponse__Output>
  LeaseTimeToLive: MethodDefinition<_warden_v1_LeaseTimeToLiveRequest, _warden_v1_LeaseTimeToLiveResponse, _warden_v1_LeaseTimeToLiveRequest__Output, _warden_v1_LeaseTimeToLiveResponse__Output>
}
