package dev.warden.client.internal;

import io.grpc.Channel;

/** One node an attempt goes to: its address and a channel to it (any of Warden's services). */
public record Node(Endpoint address, Channel channel) {}
