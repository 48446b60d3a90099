import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { AcquireRequest as _warden_v1_AcquireRequest, AcquireRequest__Output as _warden_v1_AcquireRequest__Output } from './warden/v1/AcquireRequest.js';
import type { AcquireResponse as _warden_v1_AcquireResponse, AcquireResponse__Output as _warden_v1_AcquireResponse__Output } from './warden/v1/AcquireResponse.js';
import type { AddNodeRequest as _warden_v1_AddNodeRequest, AddNodeRequest__Output as _warden_v1_AddNodeRequest__Output } from './warden/v1/AddNodeRequest.js';
import type { AdminClient as _warden_v1_AdminClient, AdminDefinition as _warden_v1_AdminDefinition } from './warden/v1/Admin.js';
import type { AuditRecord as _warden_v1_AuditRecord, AuditRecord__Output as _warden_v1_AuditRecord__Output } from './warden/v1/AuditRecord.js';
import type { AuditTrailRequest as _warden_v1_AuditTrailRequest, AuditTrailRequest__Output as _warden_v1_AuditTrailRequest__Output } from './warden/v1/AuditTrailRequest.js';
import type { AuditTrailResponse as _warden_v1_AuditTrailResponse, AuditTrailResponse__Output as _warden_v1_AuditTrailResponse__Output } from './warden/v1/AuditTrailResponse.js';
import type { AuthAuditRecord as _warden_v1_AuthAuditRecord, AuthAuditRecord__Output as _warden_v1_AuthAuditRecord__Output } from './warden/v1/AuthAuditRecord.js';
import type { AuthAuditTrailRequest as _warden_v1_AuthAuditTrailRequest, AuthAuditTrailRequest__Output as _warden_v1_AuthAuditTrailRequest__Output } from './warden/v1/AuthAuditTrailRequest.js';
import type { AuthAuditTrailResponse as _warden_v1_AuthAuditTrailResponse, AuthAuditTrailResponse__Output as _warden_v1_AuthAuditTrailResponse__Output } from './warden/v1/AuthAuditTrailResponse.js';
import type { AuthChangeResponse as _warden_v1_AuthChangeResponse, AuthChangeResponse__Output as _warden_v1_AuthChangeResponse__Output } from './warden/v1/AuthChangeResponse.js';
import type { CallError as _warden_v1_CallError, CallError__Output as _warden_v1_CallError__Output } from './warden/v1/CallError.js';
import type { CallRequest as _warden_v1_CallRequest, CallRequest__Output as _warden_v1_CallRequest__Output } from './warden/v1/CallRequest.js';
import type { CallResponse as _warden_v1_CallResponse, CallResponse__Output as _warden_v1_CallResponse__Output } from './warden/v1/CallResponse.js';
import type { CancelWaitRequest as _warden_v1_CancelWaitRequest, CancelWaitRequest__Output as _warden_v1_CancelWaitRequest__Output } from './warden/v1/CancelWaitRequest.js';
import type { CancelWaitResponse as _warden_v1_CancelWaitResponse, CancelWaitResponse__Output as _warden_v1_CancelWaitResponse__Output } from './warden/v1/CancelWaitResponse.js';
import type { ClusterLimits as _warden_v1_ClusterLimits, ClusterLimits__Output as _warden_v1_ClusterLimits__Output } from './warden/v1/ClusterLimits.js';
import type { ClusterStatusRequest as _warden_v1_ClusterStatusRequest, ClusterStatusRequest__Output as _warden_v1_ClusterStatusRequest__Output } from './warden/v1/ClusterStatusRequest.js';
import type { ClusterStatusResponse as _warden_v1_ClusterStatusResponse, ClusterStatusResponse__Output as _warden_v1_ClusterStatusResponse__Output } from './warden/v1/ClusterStatusResponse.js';
import type { DeleteRoleRequest as _warden_v1_DeleteRoleRequest, DeleteRoleRequest__Output as _warden_v1_DeleteRoleRequest__Output } from './warden/v1/DeleteRoleRequest.js';
import type { DenyRequest as _warden_v1_DenyRequest, DenyRequest__Output as _warden_v1_DenyRequest__Output } from './warden/v1/DenyRequest.js';
import type { ForceReleaseRequest as _warden_v1_ForceReleaseRequest, ForceReleaseRequest__Output as _warden_v1_ForceReleaseRequest__Output } from './warden/v1/ForceReleaseRequest.js';
import type { ForceReleaseResponse as _warden_v1_ForceReleaseResponse, ForceReleaseResponse__Output as _warden_v1_ForceReleaseResponse__Output } from './warden/v1/ForceReleaseResponse.js';
import type { GetLimitsRequest as _warden_v1_GetLimitsRequest, GetLimitsRequest__Output as _warden_v1_GetLimitsRequest__Output } from './warden/v1/GetLimitsRequest.js';
import type { GetLimitsResponse as _warden_v1_GetLimitsResponse, GetLimitsResponse__Output as _warden_v1_GetLimitsResponse__Output } from './warden/v1/GetLimitsResponse.js';
import type { GrantPermissionRequest as _warden_v1_GrantPermissionRequest, GrantPermissionRequest__Output as _warden_v1_GrantPermissionRequest__Output } from './warden/v1/GrantPermissionRequest.js';
import type { GrantRoleRequest as _warden_v1_GrantRoleRequest, GrantRoleRequest__Output as _warden_v1_GrantRoleRequest__Output } from './warden/v1/GrantRoleRequest.js';
import type { Granted as _warden_v1_Granted, Granted__Output as _warden_v1_Granted__Output } from './warden/v1/Granted.js';
import type { Holder as _warden_v1_Holder, Holder__Output as _warden_v1_Holder__Output } from './warden/v1/Holder.js';
import type { HotLock as _warden_v1_HotLock, HotLock__Output as _warden_v1_HotLock__Output } from './warden/v1/HotLock.js';
import type { LeaseRevokeRequest as _warden_v1_LeaseRevokeRequest, LeaseRevokeRequest__Output as _warden_v1_LeaseRevokeRequest__Output } from './warden/v1/LeaseRevokeRequest.js';
import type { LeaseRevokeResponse as _warden_v1_LeaseRevokeResponse, LeaseRevokeResponse__Output as _warden_v1_LeaseRevokeResponse__Output } from './warden/v1/LeaseRevokeResponse.js';
import type { ListDeniedRequest as _warden_v1_ListDeniedRequest, ListDeniedRequest__Output as _warden_v1_ListDeniedRequest__Output } from './warden/v1/ListDeniedRequest.js';
import type { ListDeniedResponse as _warden_v1_ListDeniedResponse, ListDeniedResponse__Output as _warden_v1_ListDeniedResponse__Output } from './warden/v1/ListDeniedResponse.js';
import type { ListHolder as _warden_v1_ListHolder, ListHolder__Output as _warden_v1_ListHolder__Output } from './warden/v1/ListHolder.js';
import type { ListRequest as _warden_v1_ListRequest, ListRequest__Output as _warden_v1_ListRequest__Output } from './warden/v1/ListRequest.js';
import type { ListResponse as _warden_v1_ListResponse, ListResponse__Output as _warden_v1_ListResponse__Output } from './warden/v1/ListResponse.js';
import type { ListRolesRequest as _warden_v1_ListRolesRequest, ListRolesRequest__Output as _warden_v1_ListRolesRequest__Output } from './warden/v1/ListRolesRequest.js';
import type { ListRolesResponse as _warden_v1_ListRolesResponse, ListRolesResponse__Output as _warden_v1_ListRolesResponse__Output } from './warden/v1/ListRolesResponse.js';
import type { ListUsersRequest as _warden_v1_ListUsersRequest, ListUsersRequest__Output as _warden_v1_ListUsersRequest__Output } from './warden/v1/ListUsersRequest.js';
import type { ListUsersResponse as _warden_v1_ListUsersResponse, ListUsersResponse__Output as _warden_v1_ListUsersResponse__Output } from './warden/v1/ListUsersResponse.js';
import type { ListWaiter as _warden_v1_ListWaiter, ListWaiter__Output as _warden_v1_ListWaiter__Output } from './warden/v1/ListWaiter.js';
import type { ListedLock as _warden_v1_ListedLock, ListedLock__Output as _warden_v1_ListedLock__Output } from './warden/v1/ListedLock.js';
import type { LockClient as _warden_v1_LockClient, LockDefinition as _warden_v1_LockDefinition } from './warden/v1/Lock.js';
import type { Member as _warden_v1_Member, Member__Output as _warden_v1_Member__Output } from './warden/v1/Member.js';
import type { MembershipResponse as _warden_v1_MembershipResponse, MembershipResponse__Output as _warden_v1_MembershipResponse__Output } from './warden/v1/MembershipResponse.js';
import type { NotGranted as _warden_v1_NotGranted, NotGranted__Output as _warden_v1_NotGranted__Output } from './warden/v1/NotGranted.js';
import type { ProclaimRequest as _warden_v1_ProclaimRequest, ProclaimRequest__Output as _warden_v1_ProclaimRequest__Output } from './warden/v1/ProclaimRequest.js';
import type { ProclaimResponse as _warden_v1_ProclaimResponse, ProclaimResponse__Output as _warden_v1_ProclaimResponse__Output } from './warden/v1/ProclaimResponse.js';
import type { Queued as _warden_v1_Queued, Queued__Output as _warden_v1_Queued__Output } from './warden/v1/Queued.js';
import type { Quota as _warden_v1_Quota, Quota__Output as _warden_v1_Quota__Output } from './warden/v1/Quota.js';
import type { QuotaUsage as _warden_v1_QuotaUsage, QuotaUsage__Output as _warden_v1_QuotaUsage__Output } from './warden/v1/QuotaUsage.js';
import type { ReleaseRequest as _warden_v1_ReleaseRequest, ReleaseRequest__Output as _warden_v1_ReleaseRequest__Output } from './warden/v1/ReleaseRequest.js';
import type { ReleaseResponse as _warden_v1_ReleaseResponse, ReleaseResponse__Output as _warden_v1_ReleaseResponse__Output } from './warden/v1/ReleaseResponse.js';
import type { RemoveNodeRequest as _warden_v1_RemoveNodeRequest, RemoveNodeRequest__Output as _warden_v1_RemoveNodeRequest__Output } from './warden/v1/RemoveNodeRequest.js';
import type { RenewRequest as _warden_v1_RenewRequest, RenewRequest__Output as _warden_v1_RenewRequest__Output } from './warden/v1/RenewRequest.js';
import type { RenewResponse as _warden_v1_RenewResponse, RenewResponse__Output as _warden_v1_RenewResponse__Output } from './warden/v1/RenewResponse.js';
import type { ReplaceNodeRequest as _warden_v1_ReplaceNodeRequest, ReplaceNodeRequest__Output as _warden_v1_ReplaceNodeRequest__Output } from './warden/v1/ReplaceNodeRequest.js';
import type { RequestHeader as _warden_v1_RequestHeader, RequestHeader__Output as _warden_v1_RequestHeader__Output } from './warden/v1/RequestHeader.js';
import type { ResourceToken as _warden_v1_ResourceToken, ResourceToken__Output as _warden_v1_ResourceToken__Output } from './warden/v1/ResourceToken.js';
import type { RevokePermissionRequest as _warden_v1_RevokePermissionRequest, RevokePermissionRequest__Output as _warden_v1_RevokePermissionRequest__Output } from './warden/v1/RevokePermissionRequest.js';
import type { RevokeRoleRequest as _warden_v1_RevokeRoleRequest, RevokeRoleRequest__Output as _warden_v1_RevokeRoleRequest__Output } from './warden/v1/RevokeRoleRequest.js';
import type { RoleGrant as _warden_v1_RoleGrant, RoleGrant__Output as _warden_v1_RoleGrant__Output } from './warden/v1/RoleGrant.js';
import type { RoleInfo as _warden_v1_RoleInfo, RoleInfo__Output as _warden_v1_RoleInfo__Output } from './warden/v1/RoleInfo.js';
import type { SaveSnapshotChunk as _warden_v1_SaveSnapshotChunk, SaveSnapshotChunk__Output as _warden_v1_SaveSnapshotChunk__Output } from './warden/v1/SaveSnapshotChunk.js';
import type { SaveSnapshotHead as _warden_v1_SaveSnapshotHead, SaveSnapshotHead__Output as _warden_v1_SaveSnapshotHead__Output } from './warden/v1/SaveSnapshotHead.js';
import type { SaveSnapshotRequest as _warden_v1_SaveSnapshotRequest, SaveSnapshotRequest__Output as _warden_v1_SaveSnapshotRequest__Output } from './warden/v1/SaveSnapshotRequest.js';
import type { SaveSnapshotResponse as _warden_v1_SaveSnapshotResponse, SaveSnapshotResponse__Output as _warden_v1_SaveSnapshotResponse__Output } from './warden/v1/SaveSnapshotResponse.js';
import type { SetLimitsRequest as _warden_v1_SetLimitsRequest, SetLimitsRequest__Output as _warden_v1_SetLimitsRequest__Output } from './warden/v1/SetLimitsRequest.js';
import type { SetRoleQuotaRequest as _warden_v1_SetRoleQuotaRequest, SetRoleQuotaRequest__Output as _warden_v1_SetRoleQuotaRequest__Output } from './warden/v1/SetRoleQuotaRequest.js';
import type { StatusRequest as _warden_v1_StatusRequest, StatusRequest__Output as _warden_v1_StatusRequest__Output } from './warden/v1/StatusRequest.js';
import type { StatusResponse as _warden_v1_StatusResponse, StatusResponse__Output as _warden_v1_StatusResponse__Output } from './warden/v1/StatusResponse.js';
import type { Timing as _warden_v1_Timing, Timing__Output as _warden_v1_Timing__Output } from './warden/v1/Timing.js';
import type { TopLocksRequest as _warden_v1_TopLocksRequest, TopLocksRequest__Output as _warden_v1_TopLocksRequest__Output } from './warden/v1/TopLocksRequest.js';
import type { TopLocksResponse as _warden_v1_TopLocksResponse, TopLocksResponse__Output as _warden_v1_TopLocksResponse__Output } from './warden/v1/TopLocksResponse.js';
import type { UserInfo as _warden_v1_UserInfo, UserInfo__Output as _warden_v1_UserInfo__Output } from './warden/v1/UserInfo.js';
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
      AddNodeRequest: MessageTypeDefinition<_warden_v1_AddNodeRequest, _warden_v1_AddNodeRequest__Output>
      Admin: SubtypeConstructor<typeof grpc.Client, _warden_v1_AdminClient> & { service: _warden_v1_AdminDefinition }
      AuditRecord: MessageTypeDefinition<_warden_v1_AuditRecord, _warden_v1_AuditRecord__Output>
      AuditTrailRequest: MessageTypeDefinition<_warden_v1_AuditTrailRequest, _warden_v1_AuditTrailRequest__Output>
      AuditTrailResponse: MessageTypeDefinition<_warden_v1_AuditTrailResponse, _warden_v1_AuditTrailResponse__Output>
      AuthAuditRecord: MessageTypeDefinition<_warden_v1_AuthAuditRecord, _warden_v1_AuthAuditRecord__Output>
      AuthAuditTrailRequest: MessageTypeDefinition<_warden_v1_AuthAuditTrailRequest, _warden_v1_AuthAuditTrailRequest__Output>
      AuthAuditTrailResponse: MessageTypeDefinition<_warden_v1_AuthAuditTrailResponse, _warden_v1_AuthAuditTrailResponse__Output>
      AuthChangeResponse: MessageTypeDefinition<_warden_v1_AuthChangeResponse, _warden_v1_AuthChangeResponse__Output>
      CallError: MessageTypeDefinition<_warden_v1_CallError, _warden_v1_CallError__Output>
      CallRequest: MessageTypeDefinition<_warden_v1_CallRequest, _warden_v1_CallRequest__Output>
      CallResponse: MessageTypeDefinition<_warden_v1_CallResponse, _warden_v1_CallResponse__Output>
      CancelWaitRequest: MessageTypeDefinition<_warden_v1_CancelWaitRequest, _warden_v1_CancelWaitRequest__Output>
      CancelWaitResponse: MessageTypeDefinition<_warden_v1_CancelWaitResponse, _warden_v1_CancelWaitResponse__Output>
      ClusterLimits: MessageTypeDefinition<_warden_v1_ClusterLimits, _warden_v1_ClusterLimits__Output>
      ClusterStatusRequest: MessageTypeDefinition<_warden_v1_ClusterStatusRequest, _warden_v1_ClusterStatusRequest__Output>
      ClusterStatusResponse: MessageTypeDefinition<_warden_v1_ClusterStatusResponse, _warden_v1_ClusterStatusResponse__Output>
      DeleteRoleRequest: MessageTypeDefinition<_warden_v1_DeleteRoleRequest, _warden_v1_DeleteRoleRequest__Output>
      DenyRequest: MessageTypeDefinition<_warden_v1_DenyRequest, _warden_v1_DenyRequest__Output>
      ForceReleaseRequest: MessageTypeDefinition<_warden_v1_ForceReleaseRequest, _warden_v1_ForceReleaseRequest__Output>
      ForceReleaseResponse: MessageTypeDefinition<_warden_v1_ForceReleaseResponse, _warden_v1_ForceReleaseResponse__Output>
      GetLimitsRequest: MessageTypeDefinition<_warden_v1_GetLimitsRequest, _warden_v1_GetLimitsRequest__Output>
      GetLimitsResponse: MessageTypeDefinition<_warden_v1_GetLimitsResponse, _warden_v1_GetLimitsResponse__Output>
      GrantPermissionRequest: MessageTypeDefinition<_warden_v1_GrantPermissionRequest, _warden_v1_GrantPermissionRequest__Output>
      GrantRoleRequest: MessageTypeDefinition<_warden_v1_GrantRoleRequest, _warden_v1_GrantRoleRequest__Output>
      Granted: MessageTypeDefinition<_warden_v1_Granted, _warden_v1_Granted__Output>
      Holder: MessageTypeDefinition<_warden_v1_Holder, _warden_v1_Holder__Output>
      HotLock: MessageTypeDefinition<_warden_v1_HotLock, _warden_v1_HotLock__Output>
      LeaseRevokeRequest: MessageTypeDefinition<_warden_v1_LeaseRevokeRequest, _warden_v1_LeaseRevokeRequest__Output>
      LeaseRevokeResponse: MessageTypeDefinition<_warden_v1_LeaseRevokeResponse, _warden_v1_LeaseRevokeResponse__Output>
      ListDeniedRequest: MessageTypeDefinition<_warden_v1_ListDeniedRequest, _warden_v1_ListDeniedRequest__Output>
      ListDeniedResponse: MessageTypeDefinition<_warden_v1_ListDeniedResponse, _warden_v1_ListDeniedResponse__Output>
      ListHolder: MessageTypeDefinition<_warden_v1_ListHolder, _warden_v1_ListHolder__Output>
      ListRequest: MessageTypeDefinition<_warden_v1_ListRequest, _warden_v1_ListRequest__Output>
      ListResponse: MessageTypeDefinition<_warden_v1_ListResponse, _warden_v1_ListResponse__Output>
      ListRolesRequest: MessageTypeDefinition<_warden_v1_ListRolesRequest, _warden_v1_ListRolesRequest__Output>
      ListRolesResponse: MessageTypeDefinition<_warden_v1_ListRolesResponse, _warden_v1_ListRolesResponse__Output>
      ListUsersRequest: MessageTypeDefinition<_warden_v1_ListUsersRequest, _warden_v1_ListUsersRequest__Output>
      ListUsersResponse: MessageTypeDefinition<_warden_v1_ListUsersResponse, _warden_v1_ListUsersResponse__Output>
      ListWaiter: MessageTypeDefinition<_warden_v1_ListWaiter, _warden_v1_ListWaiter__Output>
      ListedLock: MessageTypeDefinition<_warden_v1_ListedLock, _warden_v1_ListedLock__Output>
      Lock: SubtypeConstructor<typeof grpc.Client, _warden_v1_LockClient> & { service: _warden_v1_LockDefinition }
      LockMode: EnumTypeDefinition
      Member: MessageTypeDefinition<_warden_v1_Member, _warden_v1_Member__Output>
      MembershipResponse: MessageTypeDefinition<_warden_v1_MembershipResponse, _warden_v1_MembershipResponse__Output>
      NotGranted: MessageTypeDefinition<_warden_v1_NotGranted, _warden_v1_NotGranted__Output>
      Permission: EnumTypeDefinition
      ProclaimRequest: MessageTypeDefinition<_warden_v1_ProclaimRequest, _warden_v1_ProclaimRequest__Output>
      ProclaimResponse: MessageTypeDefinition<_warden_v1_ProclaimResponse, _warden_v1_ProclaimResponse__Output>
      Queued: MessageTypeDefinition<_warden_v1_Queued, _warden_v1_Queued__Output>
      Quota: MessageTypeDefinition<_warden_v1_Quota, _warden_v1_Quota__Output>
      QuotaUsage: MessageTypeDefinition<_warden_v1_QuotaUsage, _warden_v1_QuotaUsage__Output>
      ReleaseRequest: MessageTypeDefinition<_warden_v1_ReleaseRequest, _warden_v1_ReleaseRequest__Output>
      ReleaseResponse: MessageTypeDefinition<_warden_v1_ReleaseResponse, _warden_v1_ReleaseResponse__Output>
      RemoveNodeRequest: MessageTypeDefinition<_warden_v1_RemoveNodeRequest, _warden_v1_RemoveNodeRequest__Output>
      RenewRequest: MessageTypeDefinition<_warden_v1_RenewRequest, _warden_v1_RenewRequest__Output>
      RenewResponse: MessageTypeDefinition<_warden_v1_RenewResponse, _warden_v1_RenewResponse__Output>
      ReplaceNodeRequest: MessageTypeDefinition<_warden_v1_ReplaceNodeRequest, _warden_v1_ReplaceNodeRequest__Output>
      RequestHeader: MessageTypeDefinition<_warden_v1_RequestHeader, _warden_v1_RequestHeader__Output>
      ResourceToken: MessageTypeDefinition<_warden_v1_ResourceToken, _warden_v1_ResourceToken__Output>
      RevokePermissionRequest: MessageTypeDefinition<_warden_v1_RevokePermissionRequest, _warden_v1_RevokePermissionRequest__Output>
      RevokeRoleRequest: MessageTypeDefinition<_warden_v1_RevokeRoleRequest, _warden_v1_RevokeRoleRequest__Output>
      RoleGrant: MessageTypeDefinition<_warden_v1_RoleGrant, _warden_v1_RoleGrant__Output>
      RoleInfo: MessageTypeDefinition<_warden_v1_RoleInfo, _warden_v1_RoleInfo__Output>
      SaveSnapshotChunk: MessageTypeDefinition<_warden_v1_SaveSnapshotChunk, _warden_v1_SaveSnapshotChunk__Output>
      SaveSnapshotHead: MessageTypeDefinition<_warden_v1_SaveSnapshotHead, _warden_v1_SaveSnapshotHead__Output>
      SaveSnapshotRequest: MessageTypeDefinition<_warden_v1_SaveSnapshotRequest, _warden_v1_SaveSnapshotRequest__Output>
      SaveSnapshotResponse: MessageTypeDefinition<_warden_v1_SaveSnapshotResponse, _warden_v1_SaveSnapshotResponse__Output>
      SetLimitsRequest: MessageTypeDefinition<_warden_v1_SetLimitsRequest, _warden_v1_SetLimitsRequest__Output>
      SetRoleQuotaRequest: MessageTypeDefinition<_warden_v1_SetRoleQuotaRequest, _warden_v1_SetRoleQuotaRequest__Output>
      StatusRequest: MessageTypeDefinition<_warden_v1_StatusRequest, _warden_v1_StatusRequest__Output>
      StatusResponse: MessageTypeDefinition<_warden_v1_StatusResponse, _warden_v1_StatusResponse__Output>
      Timing: MessageTypeDefinition<_warden_v1_Timing, _warden_v1_Timing__Output>
      TokenState: EnumTypeDefinition
      TopLocksRequest: MessageTypeDefinition<_warden_v1_TopLocksRequest, _warden_v1_TopLocksRequest__Output>
      TopLocksResponse: MessageTypeDefinition<_warden_v1_TopLocksResponse, _warden_v1_TopLocksResponse__Output>
      UserInfo: MessageTypeDefinition<_warden_v1_UserInfo, _warden_v1_UserInfo__Output>
      ValidateRequest: MessageTypeDefinition<_warden_v1_ValidateRequest, _warden_v1_ValidateRequest__Output>
      ValidateResponse: MessageTypeDefinition<_warden_v1_ValidateResponse, _warden_v1_ValidateResponse__Output>
    }
  }
}

