// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { WatchEvent as _warden_v1_WatchEvent, WatchEvent__Output as _warden_v1_WatchEvent__Output } from '../../warden/v1/WatchEvent.js';
import type { WatchRequest as _warden_v1_WatchRequest, WatchRequest__Output as _warden_v1_WatchRequest__Output } from '../../warden/v1/WatchRequest.js';

export interface WatchClient extends grpc.Client {
  Watch(argument: _warden_v1_WatchRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_warden_v1_WatchEvent__Output>;
  Watch(argument: _warden_v1_WatchRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_warden_v1_WatchEvent__Output>;
  watch(argument: _warden_v1_WatchRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_warden_v1_WatchEvent__Output>;
  watch(argument: _warden_v1_WatchRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_warden_v1_WatchEvent__Output>;
  
}

export interface WatchHandlers extends grpc.UntypedServiceImplementation {
  Watch: grpc.handleServerStreamingCall<_warden_v1_WatchRequest__Output, _warden_v1_WatchEvent>;
  
}

export interface WatchDefinition extends grpc.ServiceDefinition {
  Watch: MethodDefinition<_warden_v1_WatchRequest, _warden_v1_WatchEvent, _warden_v1_WatchRequest__Output, _warden_v1_WatchEvent__Output>
}
