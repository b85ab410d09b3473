package topology

import (
	"errors"

	"google.golang.org/protobuf/proto"

	protocolv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/protocol/v30"
	versionv1 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/version/v1"
)

// Version is the protocol version of the transactions written here (the
// UntypedVersionedMessage's version).
const Version = 30

// Marshal serializes tx as Canton does: the TopologyTransaction inside an
// UntypedVersionedMessage of Version, its fields in number order (data,
// then version). Go's protobuf writes a oneof (data) after the other fields,
// so the two fields are marshalled apart and concatenated, which protobuf
// reads as one message.
func Marshal(tx *protocolv30.TopologyTransaction) []byte {
	opts := proto.MarshalOptions{Deterministic: true}
	data, _ := opts.Marshal(tx)
	raw, _ := opts.Marshal(&versionv1.UntypedVersionedMessage{Wrapper: &versionv1.UntypedVersionedMessage_Data{Data: data}})
	raw, _ = opts.MarshalAppend(raw, &versionv1.UntypedVersionedMessage{Version: Version})
	return raw
}

// Unmarshal reads a serialized topology transaction (an
// UntypedVersionedMessage holding a TopologyTransaction with a mapping).
// Fields it does not know are skipped, as protobuf readers do.
func Unmarshal(raw []byte) (*protocolv30.TopologyTransaction, error) {
	var v versionv1.UntypedVersionedMessage
	if err := proto.Unmarshal(raw, &v); err != nil || v.GetData() == nil {
		return nil, errors.New("not a versioned topology transaction")
	}
	tx := &protocolv30.TopologyTransaction{}
	if err := proto.Unmarshal(v.GetData(), tx); err != nil || tx.GetMapping() == nil {
		return nil, errors.New("not a topology transaction")
	}
	return tx, nil
}
