package warden

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Lock/CancelWait: a committed, exactly-once removal of the caller's wait
// (if the grant won the race, the cancel releases it). The messages are
// taken from wardenpb when the generated code has them; until
// crates/warden-proto/proto declares them, they are built here from their
// published shape (dynamic messages, registered nowhere, so a regenerated
// wardenpb that has them takes over without a conflict).
const cancelWaitMethod = "/warden.v1.Lock/CancelWait"

// CancelOutcome is what a cancel of a wait did.
type CancelOutcome string

// The server's outcomes.
const (
	// The waiter was removed from the queue.
	CancelRemoved CancelOutcome = "removed"
	// The grant won the race; the cancel released it.
	CancelReleased CancelOutcome = "released"
	// Neither a waiter nor a grant of that acquire was left.
	CancelNone CancelOutcome = "none"
)

var cancelWaitTypes = sync.OnceValues(func() ([2]protoreflect.MessageType, error) {
	req, err1 := protoregistry.GlobalTypes.FindMessageByName("warden.v1.CancelWaitRequest")
	resp, err2 := protoregistry.GlobalTypes.FindMessageByName("warden.v1.CancelWaitResponse")
	if err1 == nil && err2 == nil {
		return [2]protoreflect.MessageType{req, resp}, nil
	}
	u64 := descriptorpb.FieldDescriptorProto_TYPE_UINT64.Enum()
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	msg := descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	field := func(name string, n int32, t *descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), JsonName: proto.String(name), Number: proto.Int32(n), Type: t, Label: opt}
	}
	header := field("header", 1, msg)
	header.TypeName = proto.String(".warden.v1.RequestHeader")
	file := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("warden_go_client/cancel_wait.proto"),
		Package:    proto.String("warden.v1"),
		Dependency: []string{"warden.proto"},
		Syntax:     proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("CancelWaitRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				header, field("acquire_request_id", 2, u64), field("resource", 3, str),
			}},
			{Name: proto.String("CancelWaitResponse"), Field: []*descriptorpb.FieldDescriptorProto{
				field("resource", 1, str), field("lease_id", 2, u64), field("outcome", 3, str), field("fencing_token", 4, u64),
			}},
		},
	}
	fd, err := protodesc.NewFile(file, protoregistry.GlobalFiles)
	if err != nil {
		return [2]protoreflect.MessageType{}, fmt.Errorf("CancelWait messages: %w", err)
	}
	return [2]protoreflect.MessageType{
		dynamicpb.NewMessageType(fd.Messages().ByName("CancelWaitRequest")),
		dynamicpb.NewMessageType(fd.Messages().ByName("CancelWaitResponse")),
	}, nil
})

// cancelWaitResult is a CancelWait reply.
type cancelWaitResult struct {
	Outcome      CancelOutcome
	LeaseID      uint64
	FencingToken uint64
}

// cancelWait removes the wait of the acquire with request id acquireID
// (this client's), through the retry loop with its own request id.
func (c *Client) cancelWait(ctx context.Context, acquireID uint64, resource string) (cancelWaitResult, error) {
	types, err := cancelWaitTypes()
	if err != nil {
		return cancelWaitResult{}, &Error{Kind: KindTransport, Message: err.Error()}
	}
	req, err := c.begin(ctx)
	if err != nil {
		return cancelWaitResult{}, err
	}
	defer req.finish()
	msg := types[0].New()
	fields := msg.Descriptor().Fields()
	hdr := msg.Mutable(fields.ByName("header")).Message()
	hf := hdr.Descriptor().Fields()
	h := req.header(c.clientID)
	hdr.Set(hf.ByName("client_id"), protoreflect.ValueOfUint64(h.GetClientId()))
	hdr.Set(hf.ByName("request_id"), protoreflect.ValueOfUint64(h.GetRequestId()))
	hdr.Set(hf.ByName("acked_request_id"), protoreflect.ValueOfUint64(h.GetAckedRequestId()))
	msg.Set(fields.ByName("acquire_request_id"), protoreflect.ValueOfUint64(acquireID))
	msg.Set(fields.ByName("resource"), protoreflect.ValueOfString(resource))
	var out cancelWaitResult
	err = c.do(ctx, c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		reply := types[1].New()
		_, err := unary(ctx, c.opts.AttemptTimeout, func(ctx context.Context, o ...grpc.CallOption) (struct{}, error) {
			return struct{}{}, conn.Invoke(ctx, cancelWaitMethod, msg.Interface(), reply.Interface(), o...)
		})
		if err != nil {
			return err
		}
		rf := reply.Descriptor().Fields()
		out = cancelWaitResult{
			Outcome:      CancelOutcome(reply.Get(rf.ByName("outcome")).String()),
			LeaseID:      reply.Get(rf.ByName("lease_id")).Uint(),
			FencingToken: reply.Get(rf.ByName("fencing_token")).Uint(),
		}
		return nil
	})
	return out, err
}
