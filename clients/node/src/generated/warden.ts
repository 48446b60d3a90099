import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { AcquireRequest as _warden_v1_AcquireRequest, AcquireRequest__Output as _warden_v1_AcquireRequest__Output } from './warden/v1/AcquireRequest.js';
import type { AcquireResponse as _warden_v1_AcquireResponse, AcquireResponse__Output as _warden_v1_AcquireResponse__Output } from './warden/v1/AcquireResponse.js';
import type { CallError as _warden_v1_CallError, CallError__Output as _warden_v1_CallError__Output } from './warden/v1/CallError.js';
import type { CallRequest as _warden_v1_CallRequest, CallRequest__Output as _warden_v1_CallRequest__Output } from './warden/v1/CallRequest.js';
import type { CallResponse as _warden_v1_CallResponse, CallResponse__Output as _warden_v1_CallResponse__Output } from './warden/v1/CallResponse.js';
import type { CancelWaitRequest as _warden_v1_CancelWaitRequest, CancelWaitRequest__Output as _warden_v1_CancelWaitRequest__Output } from './warden/v1/CancelWaitRequest.js';
import type { CancelWaitResponse as _warden_v1_CancelWaitResponse, CancelWaitResponse__Output as _warden_v1_CancelWaitResponse__Output } from './warden/v1/CancelWaitResponse.js';
import type { ClusterStatusRequest as _warden_v1_ClusterStatusRequest, ClusterStatusRequest__Output as _warden_v1_ClusterStatusRequest__Output } from './warden/v1/ClusterStatusRequest.js';
import type { ClusterStatusResponse as _warden_v1_ClusterStatusResponse, ClusterStatusResponse__Output as _warden_v1_ClusterStatusResponse__Output } from './warden/v1/ClusterStatusResponse.js';
import type { Granted as _warden_v1_Granted, Granted__Output as _warden_v1_Granted__Output } from './warden/v1/Granted.js';
import type { Holder as _warden_v1_Holder, Holder__Output as _warden_v1_Holder__Output } from './warden/v1/Holder.js';
import type { LeaseRevokeRequest as _warden_v1_LeaseRevokeRequest, LeaseRevokeRequest__Output as _warden_v1_LeaseRevokeRequest__Output } from './warden/v1/LeaseRevokeRequest.js';
import type { LeaseRevokeResponse as _warden_v1_LeaseRevokeResponse, LeaseRevokeResponse__Output as _warden_v1_LeaseRevokeResponse__Output } from './warden/v1/LeaseRevokeResponse.js';
import type { LockClient as _warden_v1_LockClient, LockDefinition as _warden_v1_LockDefinition } from './warden/v1/Lock.js';
import type { Member as _warden_v1_Member, Member__Output as _warden_v1_Member__Output } from './warden/v1/Member.js';
import type { NotGranted as _warden_v1_NotGranted, NotGranted__Output as _warden_v1_NotGranted__Output } from './warden/v1/NotGranted.js';
import type { ProclaimRequest as _warden_v1_ProclaimRequest, ProclaimRequest__Output as _warden_v1_ProclaimRequest__Output } from './warden/v1/ProclaimRequest.js';
import type { ProclaimResponse as _warden_v1_ProclaimResponse, ProclaimResponse__Output as _warden_v1_ProclaimResponse__Output } from './warden/v1/ProclaimResponse.js';
import type { Queued as _warden_v1_Queued, Queued__Output as _warden_v1_Queued__Output } from './warden/v1/Queued.js';
import type { ReleaseRequest as _warden_v1_ReleaseRequest, ReleaseRequest__Output as _warden_v1_ReleaseRequest__Output } from './warden/v1/ReleaseRequest.js';
import type { ReleaseResponse as _warden_v1_ReleaseResponse, ReleaseResponse__Output as _warden_v1_ReleaseResponse__Output } from './warden/v1/ReleaseResponse.js';
import type { RenewRequest as _warden_v1_RenewRequest, RenewRequest__Output as _warden_v1_RenewRequest__Output } from './warden/v1/RenewRequest.js';
import type { RenewResponse as _warden_v1_RenewResponse, RenewResponse__Output as _warden_v1_RenewResponse__Output } from './warden/v1/RenewResponse.js';
import type { RequestHeader as _warden_v1_RequestHeader, RequestHeader__Output as _warden_v1_RequestHeader__Output } from './warden/v1/RequestHeader.js';
import type { ResourceToken as _warden_v1_ResourceToken, ResourceToken__Output as _warden_v1_ResourceToken__Output } from './warden/v1/ResourceToken.js';
import type { StatusRequest as _warden_v1_StatusRequest, StatusRequest__Output as _warden_v1_StatusRequest__Output } from './warden/v1/StatusRequest.js';
import type { StatusResponse as _warden_v1_StatusResponse, StatusResponse__Output as _warden_v1_StatusResponse__Output } from './warden/v1/StatusResponse.js';
import type { Timing as _warden_v1_Timing, Timing__Output as _warden_v1_Timing__Output } from './warden/v1/Timing.js';
import type { ValidateRequest as _warden_v1_ValidateRequest, ValidateRequest__Output as _warden_v1_ValidateRequest__Output } from './warden/v1/ValidateRequest.js';
import type { ValidateResponse as _warden_v1_ValidateResponse, ValidateResponse__Output as _warden_v1_ValidateResponse__Output } from './warden/v1/ValidateResponse.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  warden: {
    v1: {
      AcquireRequest: MessageTypeDefinition<_warden_v1_AcquireRequest, _warden_v1_AcquireRequest__Output>
      AcquireResponse: MessageTypeDefinition<_warden_v1_AcquireResponse, _warden_v1_AcquireResponse__Output>
      CallError: MessageTypeDefinition<_warden_v1_CallError, _warden_v1_CallError__Output>
      CallRequest: MessageTypeDefinition<_warden_v1_CallRequest, _warden_v1_CallRequest__Output>
      CallResponse: MessageTypeDefinition<_warden_v1_CallResponse, _warden_v1_CallResponse__Output>
      CancelWaitRequest: MessageTypeDefinition<_warden_v1_CancelWaitRequest, _warden_v1_CancelWaitRequest__Output>
      CancelWaitResponse: MessageTypeDefinition<_warden_v1_CancelWaitResponse, _warden_v1_CancelWaitResponse__Output>
      ClusterStatusRequest: MessageTypeDefinition<_warden_v1_ClusterStatusRequest, _warden_v1_ClusterStatusRequest__Output>
      ClusterStatusResponse: MessageTypeDefinition<_warden_v1_ClusterStatusResponse, _warden_v1_ClusterStatusResponse__Output>
      Granted: MessageTypeDefinition<_warden_v1_Granted, _warden_v1_Granted__Output>
      Holder: MessageTypeDefinition<_warden_v1_Holder, _warden_v1_Holder__Output>
      LeaseRevokeRequest: MessageTypeDefinition<_warden_v1_LeaseRevokeRequest, _warden_v1_LeaseRevokeRequest__Output>
      LeaseRevokeResponse: MessageTypeDefinition<_warden_v1_LeaseRevokeResponse, _warden_v1_LeaseRevokeResponse__Output>
      Lock: SubtypeConstructor<typeof grpc.Client, _warden_v1_LockClient> & { service: _warden_v1_LockDefinition }
      LockMode: EnumTypeDefinition
      Member: MessageTypeDefinition<_warden_v1_Member, _warden_v1_Member__Output>
      NotGranted: MessageTypeDefinition<_warden_v1_NotGranted, _warden_v1_NotGranted__Output>
      ProclaimRequest: MessageTypeDefinition<_warden_v1_ProclaimRequest, _warden_v1_ProclaimRequest__Output>
      ProclaimResponse: MessageTypeDefinition<_warden_v1_ProclaimResponse, _warden_v1_ProclaimResponse__Output>
      Queued: MessageTypeDefinition<_warden_v1_Queued, _warden_v1_Queued__Output>
      ReleaseRequest: MessageTypeDefinition<_warden_v1_ReleaseRequest, _warden_v1_ReleaseRequest__Output>
      ReleaseResponse: MessageTypeDefinition<_warden_v1_ReleaseResponse, _warden_v1_ReleaseResponse__Output>
      RenewRequest: MessageTypeDefinition<_warden_v1_RenewRequest, _warden_v1_RenewRequest__Output>
      RenewResponse: MessageTypeDefinition<_warden_v1_RenewResponse, _warden_v1_RenewResponse__Output>
      RequestHeader: MessageTypeDefinition<_warden_v1_RequestHeader, _warden_v1_RequestHeader__Output>
      ResourceToken: MessageTypeDefinition<_warden_v1_ResourceToken, _warden_v1_ResourceToken__Output>
      StatusRequest: MessageTypeDefinition<_warden_v1_StatusRequest, _warden_v1_StatusRequest__Output>
      StatusResponse: MessageTypeDefinition<_warden_v1_StatusResponse, _warden_v1_StatusResponse__Output>
      Timing: MessageTypeDefinition<_warden_v1_Timing, _warden_v1_Timing__Output>
      TokenState: EnumTypeDefinition
      ValidateRequest: MessageTypeDefinition<_warden_v1_ValidateRequest, _warden_v1_ValidateRequest__Output>
      ValidateResponse: MessageTypeDefinition<_warden_v1_ValidateResponse, _warden_v1_ValidateResponse__Output>
    }
  }
}

