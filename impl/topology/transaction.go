package topology

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Version is the protocol version of the transactions written here (the
// UntypedVersionedMessage's version).
const Version = 30

// Enum values of com.digitalasset.canton.protocol.v30 and crypto.v30.
const (
	OpAddReplace = 1 // TopologyChangeOp

	PermissionSubmission   = 1 // ParticipantPermission
	PermissionConfirmation = 2
	PermissionObservation  = 3

	FormatSPKI = 4 // CryptoKeyFormat DER_X509_SUBJECT_PUBLIC_KEY_INFO

	UsageNamespace = 1 // SigningKeyUsage
	UsageProtocol  = 4
)

// Transaction is a TopologyTransaction with one of the mappings of an
// external party's onboarding.
type Transaction struct {
	Operation uint64
	Serial    uint32
	// Exactly one mapping is set on a decoded transaction, unless the
	// mapping is of another kind (then none is).
	NamespaceDelegation *NamespaceDelegation
	PartyToKey          *PartyToKeyMapping
	PartyToParticipant  *PartyToParticipant
}

// SigningKey is a SigningPublicKey.
type SigningKey struct {
	Format uint64
	Data   []byte
	Usage  []uint64
	Spec   uint64
}

// NamespaceDelegation makes Key the root key of Namespace (it may sign all mappings).
type NamespaceDelegation struct {
	Namespace string
	Key       SigningKey
}

// PartyToKeyMapping registers the keys that sign the party's submissions.
type PartyToKeyMapping struct {
	Party     string
	Threshold uint32
	Keys      []SigningKey
}

// PartyToParticipant says which participants host Party, with which
// permission, and how many of them must confirm.
type PartyToParticipant struct {
	Party        string
	Threshold    uint32
	Participants []Host
}

// Host is a PartyToParticipant.HostingParticipant.
type Host struct {
	ParticipantUID string
	Permission     uint64
}

// Field numbers.
const (
	fVersionedData    = 1
	fVersionedVersion = 2

	fTxOperation = 1
	fTxSerial    = 2
	fTxMapping   = 3

	fMapNamespaceDelegation = 1
	fMapPartyToParticipant  = 9
	fMapPartyToKey          = 16

	fNDNamespace    = 1
	fNDTargetKey    = 2
	fNDIsRoot       = 3
	fNDCanSignAll   = 4
	fKeyFormat      = 2
	fKeyPublicKey   = 3
	fKeyUsage       = 5
	fKeySpec        = 6
	fPTKParty       = 1
	fPTKThreshold   = 3
	fPTKKeys        = 4
	fPTPParty       = 1
	fPTPThreshold   = 2
	fPTPHosts       = 3
	fHostUID        = 1
	fHostPermission = 2
)

// Marshal serializes t as Canton does: the TopologyTransaction inside an
// UntypedVersionedMessage of Version.
func (t Transaction) Marshal() []byte {
	var m []byte
	switch {
	case t.NamespaceDelegation != nil:
		nd := t.NamespaceDelegation
		var b []byte
		b = appendString(b, fNDNamespace, nd.Namespace)
		b = appendBytes(b, fNDTargetKey, nd.Key.marshal())
		b = appendVarint(b, fNDIsRoot, 1) // deprecated, still set for older readers
		b = appendBytes(b, fNDCanSignAll, nil)
		m = appendBytes(m, fMapNamespaceDelegation, b)
	case t.PartyToKey != nil:
		var b []byte
		b = appendString(b, fPTKParty, t.PartyToKey.Party)
		b = appendVarint(b, fPTKThreshold, uint64(t.PartyToKey.Threshold))
		for _, k := range t.PartyToKey.Keys {
			b = appendBytes(b, fPTKKeys, k.marshal())
		}
		m = appendBytes(m, fMapPartyToKey, b)
	case t.PartyToParticipant != nil:
		var b []byte
		b = appendString(b, fPTPParty, t.PartyToParticipant.Party)
		b = appendVarint(b, fPTPThreshold, uint64(t.PartyToParticipant.Threshold))
		for _, h := range t.PartyToParticipant.Participants {
			var hb []byte
			hb = appendString(hb, fHostUID, h.ParticipantUID)
			hb = appendVarint(hb, fHostPermission, h.Permission)
			b = appendBytes(b, fPTPHosts, hb)
		}
		m = appendBytes(m, fMapPartyToParticipant, b)
	}
	var tx []byte
	tx = appendVarint(tx, fTxOperation, t.Operation)
	tx = appendVarint(tx, fTxSerial, uint64(t.Serial))
	tx = appendBytes(tx, fTxMapping, m)
	var out []byte
	out = appendBytes(out, fVersionedData, tx)
	return appendVarint(out, fVersionedVersion, Version)
}

func (k SigningKey) marshal() []byte {
	var b []byte
	b = appendVarint(b, fKeyFormat, k.Format)
	b = appendBytes(b, fKeyPublicKey, k.Data)
	if len(k.Usage) > 0 { // packed, as proto3 writes repeated enums
		var packed []byte
		for _, u := range k.Usage {
			packed = protowire.AppendVarint(packed, u)
		}
		b = appendBytes(b, fKeyUsage, packed)
	}
	return appendVarint(b, fKeySpec, k.Spec)
}

func appendVarint(b []byte, n protowire.Number, v uint64) []byte {
	if v == 0 {
		return b // proto3 leaves default values out
	}
	b = protowire.AppendTag(b, n, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendString(b []byte, n protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return appendBytes(b, n, []byte(s))
}

// appendBytes appends a length-delimited field: bytes or an embedded message.
func appendBytes(b []byte, n protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// Unmarshal reads a serialized topology transaction (an
// UntypedVersionedMessage holding a TopologyTransaction). Fields it does
// not know are skipped, as protobuf readers do.
func Unmarshal(raw []byte) (Transaction, error) {
	var t Transaction
	var data []byte
	hasData := false
	err := fields(raw, func(n protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		if n == fVersionedData && typ == protowire.BytesType {
			data, hasData = v, true
		}
		return nil
	})
	if err != nil || !hasData {
		return t, errors.New("not a versioned topology transaction")
	}
	var mapping []byte
	hasMapping := false
	err = fields(data, func(n protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case n == fTxOperation && typ == protowire.VarintType:
			t.Operation = x
		case n == fTxSerial && typ == protowire.VarintType:
			t.Serial = uint32(x)
		case n == fTxMapping && typ == protowire.BytesType:
			mapping, hasMapping = v, true
		}
		return nil
	})
	if err != nil || !hasMapping {
		return t, errors.New("not a topology transaction")
	}
	err = fields(mapping, func(n protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		if typ != protowire.BytesType {
			return fmt.Errorf("mapping field %d has wire type %d", n, typ)
		}
		var err error
		switch n {
		case fMapNamespaceDelegation:
			t.NamespaceDelegation, err = unmarshalND(v)
		case fMapPartyToKey:
			t.PartyToKey, err = unmarshalPTK(v)
		case fMapPartyToParticipant:
			t.PartyToParticipant, err = unmarshalPTP(v)
		}
		return err
	})
	if err != nil {
		return t, fmt.Errorf("not a topology mapping: %w", err)
	}
	return t, nil
}

func unmarshalND(b []byte) (*NamespaceDelegation, error) {
	nd := &NamespaceDelegation{}
	return nd, fields(b, func(n protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		var err error
		switch {
		case n == fNDNamespace && typ == protowire.BytesType:
			nd.Namespace = string(v)
		case n == fNDTargetKey && typ == protowire.BytesType:
			nd.Key, err = unmarshalKey(v)
		}
		return err
	})
}

func unmarshalPTK(b []byte) (*PartyToKeyMapping, error) {
	m := &PartyToKeyMapping{}
	return m, fields(b, func(n protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case n == fPTKParty && typ == protowire.BytesType:
			m.Party = string(v)
		case n == fPTKThreshold && typ == protowire.VarintType:
			m.Threshold = uint32(x)
		case n == fPTKKeys && typ == protowire.BytesType:
			k, err := unmarshalKey(v)
			if err != nil {
				return err
			}
			m.Keys = append(m.Keys, k)
		}
		return nil
	})
}

func unmarshalPTP(b []byte) (*PartyToParticipant, error) {
	m := &PartyToParticipant{}
	return m, fields(b, func(n protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case n == fPTPParty && typ == protowire.BytesType:
			m.Party = string(v)
		case n == fPTPThreshold && typ == protowire.VarintType:
			m.Threshold = uint32(x)
		case n == fPTPHosts && typ == protowire.BytesType:
			var h Host
			err := fields(v, func(n protowire.Number, typ protowire.Type, v []byte, x uint64) error {
				switch {
				case n == fHostUID && typ == protowire.BytesType:
					h.ParticipantUID = string(v)
				case n == fHostPermission && typ == protowire.VarintType:
					h.Permission = x
				}
				return nil
			})
			if err != nil {
				return err
			}
			m.Participants = append(m.Participants, h)
		}
		return nil
	})
}

func unmarshalKey(b []byte) (SigningKey, error) {
	var k SigningKey
	return k, fields(b, func(n protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case n == fKeyFormat && typ == protowire.VarintType:
			k.Format = x
		case n == fKeyPublicKey && typ == protowire.BytesType:
			k.Data = append([]byte(nil), v...)
		case n == fKeySpec && typ == protowire.VarintType:
			k.Spec = x
		case n == fKeyUsage && typ == protowire.VarintType:
			k.Usage = append(k.Usage, x)
		case n == fKeyUsage && typ == protowire.BytesType: // packed
			for len(v) > 0 {
				u, l := protowire.ConsumeVarint(v)
				if l < 0 {
					return protowire.ParseError(l)
				}
				k.Usage, v = append(k.Usage, u), v[l:]
			}
		}
		return nil
	})
}

// fields calls f with each field of the protobuf message b: its number, wire
// type, and its bytes (length-delimited) or value (varint, fixed).
func fields(b []byte, f func(n protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, l = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
		case protowire.Fixed32Type:
			var x32 uint32
			x32, l = protowire.ConsumeFixed32(b)
			x = uint64(x32)
		case protowire.Fixed64Type:
			x, l = protowire.ConsumeFixed64(b)
		default:
			l = protowire.ConsumeFieldValue(n, typ, b)
		}
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		if err := f(n, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}
