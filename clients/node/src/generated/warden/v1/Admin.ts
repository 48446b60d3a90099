// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AddNodeRequest as _warden_v1_AddNodeRequest, AddNodeRequest__Output as _warden_v1_AddNodeRequest__Output } from '../../warden/v1/AddNodeRequest.js';
import type { AuditTrailRequest as _warden_v1_AuditTrailRequest, AuditTrailRequest__Output as _warden_v1_AuditTrailRequest__Output } from '../../warden/v1/AuditTrailRequest.js';
import type { AuditTrailResponse as _warden_v1_AuditTrailResponse, AuditTrailResponse__Output as _warden_v1_AuditTrailResponse__Output } from '../../warden/v1/AuditTrailResponse.js';
import type { AuthAuditTrailRequest as _warden_v1_AuthAuditTrailRequest, AuthAuditTrailRequest__Output as _warden_v1_AuthAuditTrailRequest__Output } from '../../warden/v1/AuthAuditTrailRequest.js';
import type { AuthAuditTrailResponse as _warden_v1_AuthAuditTrailResponse, AuthAuditTrailResponse__Output as _warden_v1_AuthAuditTrailResponse__Output } from '../../warden/v1/AuthAuditTrailResponse.js';
import type { AuthChangeResponse as _warden_v1_AuthChangeResponse, AuthChangeResponse__Output as _warden_v1_AuthChangeResponse__Output } from '../../warden/v1/AuthChangeResponse.js';
import type { DeleteRoleRequest as _warden_v1_DeleteRoleRequest, DeleteRoleRequest__Output as _warden_v1_DeleteRoleRequest__Output } from '../../warden/v1/DeleteRoleRequest.js';
import type { DenyRequest as _warden_v1_DenyRequest, DenyRequest__Output as _warden_v1_DenyRequest__Output } from '../../warden/v1/DenyRequest.js';
import type { ForceReleaseRequest as _warden_v1_ForceReleaseRequest, ForceReleaseRequest__Output as _warden_v1_ForceReleaseRequest__Output } from '../../warden/v1/ForceReleaseRequest.js';
import type { ForceReleaseResponse as _warden_v1_ForceReleaseResponse, ForceReleaseResponse__Output as _warden_v1_ForceReleaseResponse__Output } from '../../warden/v1/ForceReleaseResponse.js';
import type { GetLimitsRequest as _warden_v1_GetLimitsRequest, GetLimitsRequest__Output as _warden_v1_GetLimitsRequest__Output } from '../../warden/v1/GetLimitsRequest.js';
import type { GetLimitsResponse as _warden_v1_GetLimitsResponse, GetLimitsResponse__Output as _warden_v1_GetLimitsResponse__Output } from '../../warden/v1/GetLimitsResponse.js';
import type { GrantPermissionRequest as _warden_v1_GrantPermissionRequest, GrantPermissionRequest__Output as _warden_v1_GrantPermissionRequest__Output } from '../../warden/v1/GrantPermissionRequest.js';
import type { GrantRoleRequest as _warden_v1_GrantRoleRequest, GrantRoleRequest__Output as _warden_v1_GrantRoleRequest__Output } from '../../warden/v1/GrantRoleRequest.js';
import type { ListDeniedRequest as _warden_v1_ListDeniedRequest, ListDeniedRequest__Output as _warden_v1_ListDeniedRequest__Output } from '../../warden/v1/ListDeniedRequest.js';
import type { ListDeniedResponse as _warden_v1_ListDeniedResponse, ListDeniedResponse__Output as _warden_v1_ListDeniedResponse__Output } from '../../warden/v1/ListDeniedResponse.js';
import type { ListRequest as _warden_v1_ListRequest, ListRequest__Output as _warden_v1_ListRequest__Output } from '../../warden/v1/ListRequest.js';
import type { ListResponse as _warden_v1_ListResponse, ListResponse__Output as _warden_v1_ListResponse__Output } from '../../warden/v1/ListResponse.js';
import type { ListRolesRequest as _warden_v1_ListRolesRequest, ListRolesRequest__Output as _warden_v1_ListRolesRequest__Output } from '../../warden/v1/ListRolesRequest.js';
import type { ListRolesResponse as _warden_v1_ListRolesResponse, ListRolesResponse__Output as _warden_v1_ListRolesResponse__Output } from '../../warden/v1/ListRolesResponse.js';
import type { ListUsersRequest as _warden_v1_ListUsersRequest, ListUsersRequest__Output as _warden_v1_ListUsersRequest__Output } from '../../warden/v1/ListUsersRequest.js';
import type { ListUsersResponse as _warden_v1_ListUsersResponse, ListUsersResponse__Output as _warden_v1_ListUsersResponse__Output } from '../../warden/v1/ListUsersResponse.js';
import type { MembershipResponse as _warden_v1_MembershipResponse, MembershipResponse__Output as _warden_v1_MembershipResponse__Output } from '../../warden/v1/MembershipResponse.js';
import type { RemoveNodeRequest as _warden_v1_RemoveNodeRequest, RemoveNodeRequest__Output as _warden_v1_RemoveNodeRequest__Output } from '../../warden/v1/RemoveNodeRequest.js';
import type { ReplaceNodeRequest as _warden_v1_ReplaceNodeRequest, ReplaceNodeRequest__Output as _warden_v1_ReplaceNodeRequest__Output } from '../../warden/v1/ReplaceNodeRequest.js';
import type { RevokePermissionRequest as _warden_v1_RevokePermissionRequest, RevokePermissionRequest__Output as _warden_v1_RevokePermissionRequest__Output } from '../../warden/v1/RevokePermissionRequest.js';
import type { RevokeRoleRequest as _warden_v1_RevokeRoleRequest, RevokeRoleRequest__Output as _warden_v1_RevokeRoleRequest__Output } from '../../warden/v1/RevokeRoleRequest.js';
import type { SaveSnapshotChunk as _warden_v1_SaveSnapshotChunk, SaveSnapshotChunk__Output as _warden_v1_SaveSnapshotChunk__Output } from '../../warden/v1/SaveSnapshotChunk.js';
import type { SaveSnapshotRequest as _warden_v1_SaveSnapshotRequest, SaveSnapshotRequest__Output as _warden_v1_SaveSnapshotRequest__Output } from '../../warden/v1/SaveSnapshotRequest.js';
import type { SaveSnapshotResponse as _warden_v1_SaveSnapshotResponse, SaveSnapshotResponse__Output as _warden_v1_SaveSnapshotResponse__Output } from '../../warden/v1/SaveSnapshotResponse.js';
import type { SetLimitsRequest as _warden_v1_SetLimitsRequest, SetLimitsRequest__Output as _warden_v1_SetLimitsRequest__Output } from '../../warden/v1/SetLimitsRequest.js';
import type { SetRoleQuotaRequest as _warden_v1_SetRoleQuotaRequest, SetRoleQuotaRequest__Output as _warden_v1_SetRoleQuotaRequest__Output } from '../../warden/v1/SetRoleQuotaRequest.js';
import type { TopLocksRequest as _warden_v1_TopLocksRequest, TopLocksRequest__Output as _warden_v1_TopLocksRequest__Output } from '../../warden/v1/TopLocksRequest.js';
import type { TopLocksResponse as _warden_v1_TopLocksResponse, TopLocksResponse__Output as _warden_v1_TopLocksResponse__Output } from '../../warden/v1/TopLocksResponse.js';

export interface AdminClient extends grpc.Client {
  AddNode(argument: _warden_v1_AddNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  AddNode(argument: _warden_v1_AddNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  AddNode(argument: _warden_v1_AddNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  AddNode(argument: _warden_v1_AddNodeRequest, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  addNode(argument: _warden_v1_AddNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  addNode(argument: _warden_v1_AddNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  addNode(argument: _warden_v1_AddNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  addNode(argument: _warden_v1_AddNodeRequest, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  
  AuditTrail(argument: _warden_v1_AuditTrailRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuditTrailResponse__Output>): grpc.ClientUnaryCall;
  AuditTrail(argument: _warden_v1_AuditTrailRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuditTrailResponse__Output>): grpc.ClientUnaryCall;
  AuditTrail(argument: _warden_v1_AuditTrailRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuditTrailResponse__Output>): grpc.ClientUnaryCall;
  AuditTrail(argument: _warden_v1_AuditTrailRequest, callback: grpc.requestCallback<_warden_v1_AuditTrailResponse__Output>): grpc.ClientUnaryCall;
  auditTrail(argument: _warden_v1_AuditTrailRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuditTrailResponse__Output>): grpc.ClientUnaryCall;
  auditTrail(argument: _warden_v1_AuditTrailRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuditTrailResponse__Output>): grpc.ClientUnaryCall;
  auditTrail(argument: _warden_v1_AuditTrailRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuditTrailResponse__Output>): grpc.ClientUnaryCall;
  auditTrail(argument: _warden_v1_AuditTrailRequest, callback: grpc.requestCallback<_warden_v1_AuditTrailResponse__Output>): grpc.ClientUnaryCall;
  
  AuthAuditTrail(argument: _warden_v1_AuthAuditTrailRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthAuditTrailResponse__Output>): grpc.ClientUnaryCall;
  AuthAuditTrail(argument: _warden_v1_AuthAuditTrailRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthAuditTrailResponse__Output>): grpc.ClientUnaryCall;
  AuthAuditTrail(argument: _warden_v1_AuthAuditTrailRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthAuditTrailResponse__Output>): grpc.ClientUnaryCall;
  AuthAuditTrail(argument: _warden_v1_AuthAuditTrailRequest, callback: grpc.requestCallback<_warden_v1_AuthAuditTrailResponse__Output>): grpc.ClientUnaryCall;
  authAuditTrail(argument: _warden_v1_AuthAuditTrailRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthAuditTrailResponse__Output>): grpc.ClientUnaryCall;
  authAuditTrail(argument: _warden_v1_AuthAuditTrailRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthAuditTrailResponse__Output>): grpc.ClientUnaryCall;
  authAuditTrail(argument: _warden_v1_AuthAuditTrailRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthAuditTrailResponse__Output>): grpc.ClientUnaryCall;
  authAuditTrail(argument: _warden_v1_AuthAuditTrailRequest, callback: grpc.requestCallback<_warden_v1_AuthAuditTrailResponse__Output>): grpc.ClientUnaryCall;
  
  DeleteRole(argument: _warden_v1_DeleteRoleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  DeleteRole(argument: _warden_v1_DeleteRoleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  DeleteRole(argument: _warden_v1_DeleteRoleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  DeleteRole(argument: _warden_v1_DeleteRoleRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  deleteRole(argument: _warden_v1_DeleteRoleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  deleteRole(argument: _warden_v1_DeleteRoleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  deleteRole(argument: _warden_v1_DeleteRoleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  deleteRole(argument: _warden_v1_DeleteRoleRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  
  Deny(argument: _warden_v1_DenyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  Deny(argument: _warden_v1_DenyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  Deny(argument: _warden_v1_DenyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  Deny(argument: _warden_v1_DenyRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  deny(argument: _warden_v1_DenyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  deny(argument: _warden_v1_DenyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  deny(argument: _warden_v1_DenyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  deny(argument: _warden_v1_DenyRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  
  ForceRelease(argument: _warden_v1_ForceReleaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ForceReleaseResponse__Output>): grpc.ClientUnaryCall;
  ForceRelease(argument: _warden_v1_ForceReleaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ForceReleaseResponse__Output>): grpc.ClientUnaryCall;
  ForceRelease(argument: _warden_v1_ForceReleaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ForceReleaseResponse__Output>): grpc.ClientUnaryCall;
  ForceRelease(argument: _warden_v1_ForceReleaseRequest, callback: grpc.requestCallback<_warden_v1_ForceReleaseResponse__Output>): grpc.ClientUnaryCall;
  forceRelease(argument: _warden_v1_ForceReleaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ForceReleaseResponse__Output>): grpc.ClientUnaryCall;
  forceRelease(argument: _warden_v1_ForceReleaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ForceReleaseResponse__Output>): grpc.ClientUnaryCall;
  forceRelease(argument: _warden_v1_ForceReleaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ForceReleaseResponse__Output>): grpc.ClientUnaryCall;
  forceRelease(argument: _warden_v1_ForceReleaseRequest, callback: grpc.requestCallback<_warden_v1_ForceReleaseResponse__Output>): grpc.ClientUnaryCall;
  
  GetLimits(argument: _warden_v1_GetLimitsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_GetLimitsResponse__Output>): grpc.ClientUnaryCall;
  GetLimits(argument: _warden_v1_GetLimitsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_GetLimitsResponse__Output>): grpc.ClientUnaryCall;
  GetLimits(argument: _warden_v1_GetLimitsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_GetLimitsResponse__Output>): grpc.ClientUnaryCall;
  GetLimits(argument: _warden_v1_GetLimitsRequest, callback: grpc.requestCallback<_warden_v1_GetLimitsResponse__Output>): grpc.ClientUnaryCall;
  getLimits(argument: _warden_v1_GetLimitsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_GetLimitsResponse__Output>): grpc.ClientUnaryCall;
  getLimits(argument: _warden_v1_GetLimitsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_GetLimitsResponse__Output>): grpc.ClientUnaryCall;
  getLimits(argument: _warden_v1_GetLimitsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_GetLimitsResponse__Output>): grpc.ClientUnaryCall;
  getLimits(argument: _warden_v1_GetLimitsRequest, callback: grpc.requestCallback<_warden_v1_GetLimitsResponse__Output>): grpc.ClientUnaryCall;
  
  GrantPermission(argument: _warden_v1_GrantPermissionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  GrantPermission(argument: _warden_v1_GrantPermissionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  GrantPermission(argument: _warden_v1_GrantPermissionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  GrantPermission(argument: _warden_v1_GrantPermissionRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  grantPermission(argument: _warden_v1_GrantPermissionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  grantPermission(argument: _warden_v1_GrantPermissionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  grantPermission(argument: _warden_v1_GrantPermissionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  grantPermission(argument: _warden_v1_GrantPermissionRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  
  GrantRole(argument: _warden_v1_GrantRoleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  GrantRole(argument: _warden_v1_GrantRoleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  GrantRole(argument: _warden_v1_GrantRoleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  GrantRole(argument: _warden_v1_GrantRoleRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  grantRole(argument: _warden_v1_GrantRoleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  grantRole(argument: _warden_v1_GrantRoleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  grantRole(argument: _warden_v1_GrantRoleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  grantRole(argument: _warden_v1_GrantRoleRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  
  List(argument: _warden_v1_ListRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  List(argument: _warden_v1_ListRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  List(argument: _warden_v1_ListRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  List(argument: _warden_v1_ListRequest, callback: grpc.requestCallback<_warden_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  list(argument: _warden_v1_ListRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  list(argument: _warden_v1_ListRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  list(argument: _warden_v1_ListRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  list(argument: _warden_v1_ListRequest, callback: grpc.requestCallback<_warden_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  
  ListDenied(argument: _warden_v1_ListDeniedRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListDeniedResponse__Output>): grpc.ClientUnaryCall;
  ListDenied(argument: _warden_v1_ListDeniedRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ListDeniedResponse__Output>): grpc.ClientUnaryCall;
  ListDenied(argument: _warden_v1_ListDeniedRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListDeniedResponse__Output>): grpc.ClientUnaryCall;
  ListDenied(argument: _warden_v1_ListDeniedRequest, callback: grpc.requestCallback<_warden_v1_ListDeniedResponse__Output>): grpc.ClientUnaryCall;
  listDenied(argument: _warden_v1_ListDeniedRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListDeniedResponse__Output>): grpc.ClientUnaryCall;
  listDenied(argument: _warden_v1_ListDeniedRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ListDeniedResponse__Output>): grpc.ClientUnaryCall;
  listDenied(argument: _warden_v1_ListDeniedRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListDeniedResponse__Output>): grpc.ClientUnaryCall;
  listDenied(argument: _warden_v1_ListDeniedRequest, callback: grpc.requestCallback<_warden_v1_ListDeniedResponse__Output>): grpc.ClientUnaryCall;
  
  ListRoles(argument: _warden_v1_ListRolesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListRolesResponse__Output>): grpc.ClientUnaryCall;
  ListRoles(argument: _warden_v1_ListRolesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ListRolesResponse__Output>): grpc.ClientUnaryCall;
  ListRoles(argument: _warden_v1_ListRolesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListRolesResponse__Output>): grpc.ClientUnaryCall;
  ListRoles(argument: _warden_v1_ListRolesRequest, callback: grpc.requestCallback<_warden_v1_ListRolesResponse__Output>): grpc.ClientUnaryCall;
  listRoles(argument: _warden_v1_ListRolesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListRolesResponse__Output>): grpc.ClientUnaryCall;
  listRoles(argument: _warden_v1_ListRolesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ListRolesResponse__Output>): grpc.ClientUnaryCall;
  listRoles(argument: _warden_v1_ListRolesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListRolesResponse__Output>): grpc.ClientUnaryCall;
  listRoles(argument: _warden_v1_ListRolesRequest, callback: grpc.requestCallback<_warden_v1_ListRolesResponse__Output>): grpc.ClientUnaryCall;
  
  ListUsers(argument: _warden_v1_ListUsersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListUsersResponse__Output>): grpc.ClientUnaryCall;
  ListUsers(argument: _warden_v1_ListUsersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ListUsersResponse__Output>): grpc.ClientUnaryCall;
  ListUsers(argument: _warden_v1_ListUsersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListUsersResponse__Output>): grpc.ClientUnaryCall;
  ListUsers(argument: _warden_v1_ListUsersRequest, callback: grpc.requestCallback<_warden_v1_ListUsersResponse__Output>): grpc.ClientUnaryCall;
  listUsers(argument: _warden_v1_ListUsersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListUsersResponse__Output>): grpc.ClientUnaryCall;
  listUsers(argument: _warden_v1_ListUsersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_ListUsersResponse__Output>): grpc.ClientUnaryCall;
  listUsers(argument: _warden_v1_ListUsersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_ListUsersResponse__Output>): grpc.ClientUnaryCall;
  listUsers(argument: _warden_v1_ListUsersRequest, callback: grpc.requestCallback<_warden_v1_ListUsersResponse__Output>): grpc.ClientUnaryCall;
  
  RemoveNode(argument: _warden_v1_RemoveNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  RemoveNode(argument: _warden_v1_RemoveNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  RemoveNode(argument: _warden_v1_RemoveNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  RemoveNode(argument: _warden_v1_RemoveNodeRequest, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  removeNode(argument: _warden_v1_RemoveNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  removeNode(argument: _warden_v1_RemoveNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  removeNode(argument: _warden_v1_RemoveNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  removeNode(argument: _warden_v1_RemoveNodeRequest, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  
  ReplaceNode(argument: _warden_v1_ReplaceNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  ReplaceNode(argument: _warden_v1_ReplaceNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  ReplaceNode(argument: _warden_v1_ReplaceNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  ReplaceNode(argument: _warden_v1_ReplaceNodeRequest, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  replaceNode(argument: _warden_v1_ReplaceNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  replaceNode(argument: _warden_v1_ReplaceNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  replaceNode(argument: _warden_v1_ReplaceNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  replaceNode(argument: _warden_v1_ReplaceNodeRequest, callback: grpc.requestCallback<_warden_v1_MembershipResponse__Output>): grpc.ClientUnaryCall;
  
  RevokePermission(argument: _warden_v1_RevokePermissionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  RevokePermission(argument: _warden_v1_RevokePermissionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  RevokePermission(argument: _warden_v1_RevokePermissionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  RevokePermission(argument: _warden_v1_RevokePermissionRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  revokePermission(argument: _warden_v1_RevokePermissionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  revokePermission(argument: _warden_v1_RevokePermissionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  revokePermission(argument: _warden_v1_RevokePermissionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  revokePermission(argument: _warden_v1_RevokePermissionRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  
  RevokeRole(argument: _warden_v1_RevokeRoleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  RevokeRole(argument: _warden_v1_RevokeRoleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  RevokeRole(argument: _warden_v1_RevokeRoleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  RevokeRole(argument: _warden_v1_RevokeRoleRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  revokeRole(argument: _warden_v1_RevokeRoleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  revokeRole(argument: _warden_v1_RevokeRoleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  revokeRole(argument: _warden_v1_RevokeRoleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  revokeRole(argument: _warden_v1_RevokeRoleRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  
  SaveSnapshot(argument: _warden_v1_SaveSnapshotRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_SaveSnapshotResponse__Output>): grpc.ClientUnaryCall;
  SaveSnapshot(argument: _warden_v1_SaveSnapshotRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_SaveSnapshotResponse__Output>): grpc.ClientUnaryCall;
  SaveSnapshot(argument: _warden_v1_SaveSnapshotRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_SaveSnapshotResponse__Output>): grpc.ClientUnaryCall;
  SaveSnapshot(argument: _warden_v1_SaveSnapshotRequest, callback: grpc.requestCallback<_warden_v1_SaveSnapshotResponse__Output>): grpc.ClientUnaryCall;
  saveSnapshot(argument: _warden_v1_SaveSnapshotRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_SaveSnapshotResponse__Output>): grpc.ClientUnaryCall;
  saveSnapshot(argument: _warden_v1_SaveSnapshotRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_SaveSnapshotResponse__Output>): grpc.ClientUnaryCall;
  saveSnapshot(argument: _warden_v1_SaveSnapshotRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_SaveSnapshotResponse__Output>): grpc.ClientUnaryCall;
  saveSnapshot(argument: _warden_v1_SaveSnapshotRequest, callback: grpc.requestCallback<_warden_v1_SaveSnapshotResponse__Output>): grpc.ClientUnaryCall;
  
  SaveSnapshotStream(argument: _warden_v1_SaveSnapshotRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_warden_v1_SaveSnapshotChunk__Output>;
  SaveSnapshotStream(argument: _warden_v1_SaveSnapshotRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_warden_v1_SaveSnapshotChunk__Output>;
  saveSnapshotStream(argument: _warden_v1_SaveSnapshotRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_warden_v1_SaveSnapshotChunk__Output>;
  saveSnapshotStream(argument: _warden_v1_SaveSnapshotRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_warden_v1_SaveSnapshotChunk__Output>;
  
  SetLimits(argument: _warden_v1_SetLimitsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  SetLimits(argument: _warden_v1_SetLimitsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  SetLimits(argument: _warden_v1_SetLimitsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  SetLimits(argument: _warden_v1_SetLimitsRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  setLimits(argument: _warden_v1_SetLimitsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  setLimits(argument: _warden_v1_SetLimitsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  setLimits(argument: _warden_v1_SetLimitsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  setLimits(argument: _warden_v1_SetLimitsRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  
  SetRoleQuota(argument: _warden_v1_SetRoleQuotaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  SetRoleQuota(argument: _warden_v1_SetRoleQuotaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  SetRoleQuota(argument: _warden_v1_SetRoleQuotaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  SetRoleQuota(argument: _warden_v1_SetRoleQuotaRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  setRoleQuota(argument: _warden_v1_SetRoleQuotaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  setRoleQuota(argument: _warden_v1_SetRoleQuotaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  setRoleQuota(argument: _warden_v1_SetRoleQuotaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  setRoleQuota(argument: _warden_v1_SetRoleQuotaRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  
  TopLocks(argument: _warden_v1_TopLocksRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_TopLocksResponse__Output>): grpc.ClientUnaryCall;
  TopLocks(argument: _warden_v1_TopLocksRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_TopLocksResponse__Output>): grpc.ClientUnaryCall;
  TopLocks(argument: _warden_v1_TopLocksRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_TopLocksResponse__Output>): grpc.ClientUnaryCall;
  TopLocks(argument: _warden_v1_TopLocksRequest, callback: grpc.requestCallback<_warden_v1_TopLocksResponse__Output>): grpc.ClientUnaryCall;
  topLocks(argument: _warden_v1_TopLocksRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_TopLocksResponse__Output>): grpc.ClientUnaryCall;
  topLocks(argument: _warden_v1_TopLocksRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_TopLocksResponse__Output>): grpc.ClientUnaryCall;
  topLocks(argument: _warden_v1_TopLocksRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_TopLocksResponse__Output>): grpc.ClientUnaryCall;
  topLocks(argument: _warden_v1_TopLocksRequest, callback: grpc.requestCallback<_warden_v1_TopLocksResponse__Output>): grpc.ClientUnaryCall;
  
  Undeny(argument: _warden_v1_DenyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  Undeny(argument: _warden_v1_DenyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  Undeny(argument: _warden_v1_DenyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  Undeny(argument: _warden_v1_DenyRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  undeny(argument: _warden_v1_DenyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  undeny(argument: _warden_v1_DenyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  undeny(argument: _warden_v1_DenyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  undeny(argument: _warden_v1_DenyRequest, callback: grpc.requestCallback<_warden_v1_AuthChangeResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface AdminHandlers extends grpc.UntypedServiceImplementation {
  AddNode: grpc.handleUnaryCall<_warden_v1_AddNodeRequest__Output, _warden_v1_MembershipResponse>;
  
  AuditTrail: grpc.handleUnaryCall<_warden_v1_AuditTrailRequest__Output, _warden_v1_AuditTrailResponse>;
  
  AuthAuditTrail: grpc.handleUnaryCall<_warden_v1_AuthAuditTrailRequest__Output, _warden_v1_AuthAuditTrailResponse>;
  
  DeleteRole: grpc.handleUnaryCall<_warden_v1_DeleteRoleRequest__Output, _warden_v1_AuthChangeResponse>;
  
  Deny: grpc.handleUnaryCall<_warden_v1_DenyRequest__Output, _warden_v1_AuthChangeResponse>;
  
  ForceRelease: grpc.handleUnaryCall<_warden_v1_ForceReleaseRequest__Output, _warden_v1_ForceReleaseResponse>;
  
  GetLimits: grpc.handleUnaryCall<_warden_v1_GetLimitsRequest__Output, _warden_v1_GetLimitsResponse>;
  
  GrantPermission: grpc.handleUnaryCall<_warden_v1_GrantPermissionRequest__Output, _warden_v1_AuthChangeResponse>;
  
  GrantRole: grpc.handleUnaryCall<_warden_v1_GrantRoleRequest__Output, _warden_v1_AuthChangeResponse>;
  
  List: grpc.handleUnaryCall<_warden_v1_ListRequest__Output, _warden_v1_ListResponse>;
  
  ListDenied: grpc.handleUnaryCall<_warden_v1_ListDeniedRequest__Output, _warden_v1_ListDeniedResponse>;
  
  ListRoles: grpc.handleUnaryCall<_warden_v1_ListRolesRequest__Output, _warden_v1_ListRolesResponse>;
  
  ListUsers: grpc.handleUnaryCall<_warden_v1_ListUsersRequest__Output, _warden_v1_ListUsersResponse>;
  
  RemoveNode: grpc.handleUnaryCall<_warden_v1_RemoveNodeRequest__Output, _warden_v1_MembershipResponse>;
  
  ReplaceNode: grpc.handleUnaryCall<_warden_v1_ReplaceNodeRequest__Output, _warden_v1_MembershipResponse>;
  
  RevokePermission: grpc.handleUnaryCall<_warden_v1_RevokePermissionRequest__Output, _warden_v1_AuthChangeResponse>;
  
  RevokeRole: grpc.handleUnaryCall<_warden_v1_RevokeRoleRequest__Output, _warden_v1_AuthChangeResponse>;
  
  SaveSnapshot: grpc.handleUnaryCall<_warden_v1_SaveSnapshotRequest__Output, _warden_v1_SaveSnapshotResponse>;
  
  SaveSnapshotStream: grpc.handleServerStreamingCall<_warden_v1_SaveSnapshotRequest__Output, _warden_v1_SaveSnapshotChunk>;
  
  SetLimits: grpc.handleUnaryCall<_warden_v1_SetLimitsRequest__Output, _warden_v1_AuthChangeResponse>;
  
  SetRoleQuota: grpc.handleUnaryCall<_warden_v1_SetRoleQuotaRequest__Output, _warden_v1_AuthChangeResponse>;
  
  TopLocks: grpc.handleUnaryCall<_warden_v1_TopLocksRequest__Output, _warden_v1_TopLocksResponse>;
  
  Undeny: grpc.handleUnaryCall<_warden_v1_DenyRequest__Output, _warden_v1_AuthChangeResponse>;
  
}

export interface AdminDefinition extends grpc.ServiceDefinition {
  AddNode: MethodDefinition<_warden_v1_AddNodeRequest, _warden_v1_MembershipResponse, _warden_v1_AddNodeRequest__Output, _warden_v1_MembershipResponse__Output>
  AuditTrail: MethodDefinition<_warden_v1_AuditTrailRequest, _warden_v1_AuditTrailResponse, _warden_v1_AuditTrailRequest__Output, _warden_v1_AuditTrailResponse__Output>
  AuthAuditTrail: MethodDefinition<_warden_v1_AuthAuditTrailRequest, _warden_v1_AuthAuditTrailResponse, _warden_v1_AuthAuditTrailRequest__Output, _warden_v1_AuthAuditTrailResponse__Output>
  DeleteRole: MethodDefinition<_warden_v1_DeleteRoleRequest, _warden_v1_AuthChangeResponse, _warden_v1_DeleteRoleRequest__Output, _warden_v1_AuthChangeResponse__Output>
  Deny: MethodDefinition<_warden_v1_DenyRequest, _warden_v1_AuthChangeResponse, _warden_v1_DenyRequest__Output, _warden_v1_AuthChangeResponse__Output>
  ForceRelease: MethodDefinition<_warden_v1_ForceReleaseRequest, _warden_v1_ForceReleaseResponse, _warden_v1_ForceReleaseRequest__Output, _warden_v1_ForceReleaseResponse__Output>
  GetLimits: MethodDefinition<_warden_v1_GetLimitsRequest, _warden_v1_GetLimitsResponse, _warden_v1_GetLimitsRequest__Output, _warden_v1_GetLimitsResponse__Output>
  GrantPermission: MethodDefinition<_warden_v1_GrantPermissionRequest, _warden_v1_AuthChangeResponse, _warden_v1_GrantPermissionRequest__Output, _warden_v1_AuthChangeResponse__Output>
  GrantRole: MethodDefinition<_warden_v1_GrantRoleRequest, _warden_v1_AuthChangeResponse, _warden_v1_GrantRoleRequest__Output, _warden_v1_AuthChangeResponse__Output>
  List: MethodDefinition<_warden_v1_ListRequest, _warden_v1_ListResponse, _warden_v1_ListRequest__Output, _warden_v1_ListResponse__Output>
  ListDenied: MethodDefinition<_warden_v1_ListDeniedRequest, _warden_v1_ListDeniedResponse, _warden_v1_ListDeniedRequest__Output, _warden_v1_ListDeniedResponse__Output>
  ListRoles: MethodDefinition<_warden_v1_ListRolesRequest, _warden_v1_ListRolesResponse, _warden_v1_ListRolesRequest__Output, _warden_v1_ListRolesResponse__Output>
  ListUsers: MethodDefinition<_warden_v1_ListUsersRequest, _warden_v1_ListUsersResponse, _warden_v1_ListUsersRequest__Output, _warden_v1_ListUsersResponse__Output>
  RemoveNode: MethodDefinition<_warden_v1_RemoveNodeRequest, _warden_v1_MembershipResponse, _warden_v1_RemoveNodeRequest__Output, _warden_v1_MembershipResponse__Output>
  ReplaceNode: MethodDefinition<_warden_v1_ReplaceNodeRequest, _warden_v1_MembershipResponse, _warden_v1_ReplaceNodeRequest__Output, _warden_v1_MembershipResponse__Output>
  RevokePermission: MethodDefinition<_warden_v1_RevokePermissionRequest, _warden_v1_AuthChangeResponse, _warden_v1_RevokePermissionRequest__Output, _warden_v1_AuthChangeResponse__Output>
  RevokeRole: MethodDefinition<_warden_v1_RevokeRoleRequest, _warden_v1_AuthChangeResponse, _warden_v1_RevokeRoleRequest__Output, _warden_v1_AuthChangeResponse__Output>
  SaveSnapshot: MethodDefinition<_warden_v1_SaveSnapshotRequest, _warden_v1_SaveSnapshotResponse, _warden_v1_SaveSnapshotRequest__Output, _warden_v1_SaveSnapshotResponse__Output>
  SaveSnapshotStream: MethodDefinition<_warden_v1_SaveSnapshotRequest, _warden_v1_SaveSnapshotChunk, _warden_v1_SaveSnapshotRequest__Output, _warden_v1_SaveSnapshotChunk__Output>
  SetLimits: MethodDefinition<_warden_v1_SetLimitsRequest, _warden_v1_AuthChangeResponse, _warden_v1_SetLimitsRequest__Output, _warden_v1_AuthChangeResponse__Output>
  SetRoleQuota: MethodDefinition<_warden_v1_SetRoleQuotaRequest, _warden_v1_AuthChangeResponse, _warden_v1_SetRoleQuotaRequest__Output, _warden_v1_AuthChangeResponse__Output>
  TopLocks: MethodDefinition<_warden_v1_TopLocksRequest, _warden_v1_TopLocksResponse, _warden_v1_TopLocksRequest__Output, _warden_v1_TopLocksResponse__Output>
  Undeny: MethodDefinition<_warden_v1_DenyRequest, _warden_v1_AuthChangeResponse, _warden_v1_DenyRequest__Output, _warden_v1_AuthChangeResponse__Output>
}
