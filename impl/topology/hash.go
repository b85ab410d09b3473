package topology

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"slices"
)

// Canton's hash purposes (HashPurpose.scala) used here.
const (
	PurposeTopologyTransaction  = 11 // TopologyTransactionSignature
	PurposePublicKeyFingerprint = 12
	PurposeMultiTopology        = 55 // MultiTopologyTransaction
)

// Hash is Canton's SHA-256 hash with a purpose: SHA-256 over the purpose
// as 4 bytes big endian and data, as a multihash (0x12 SHA-256, 0x20 length).
func Hash(purpose uint32, data []byte) []byte {
	h := sha256.New()
	_ = binary.Write(h, binary.BigEndian, purpose)
	h.Write(data)
	return append([]byte{0x12, 0x20}, h.Sum(nil)...)
}

// TransactionHash is the hash of one serialized topology transaction.
func TransactionHash(tx []byte) []byte {
	return Hash(PurposeTopologyTransaction, tx)
}

// MultiHash is the hash a party signs instead of each transaction: the
// transactions' hashes sorted by their hex form (of hashes of one length,
// their bytes' order), their count and each with its length as 4 bytes big
// endian, hashed with purpose 55.
func MultiHash(txs [][]byte) []byte {
	hashes := make([][]byte, len(txs))
	for i, tx := range txs {
		hashes[i] = TransactionHash(tx)
	}
	slices.SortFunc(hashes, bytes.Compare)
	var buf bytes.Buffer
	_ = binary.Write(&buf, binary.BigEndian, uint32(len(hashes)))
	for _, h := range hashes {
		_ = binary.Write(&buf, binary.BigEndian, uint32(len(h)))
		buf.Write(h)
	}
	return Hash(PurposeMultiTopology, buf.Bytes())
}
