package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of daml_lf.proto's Archive, whose hash (the package id) is
// the hex SHA-256 of its payload, and ArchivePayload.
const (
	archiveHashFunction = 1
	archivePayload      = 3
	archiveHash         = 4
	payloadMinor        = 3
	payloadDamlLF1      = 2
	payloadDamlLF2      = 4
)

// archivePackageID is a DALF's package id; anything but such an Archive is refused.
func archivePackageID(dalf []byte) (string, error) {
	var payload []byte
	var hash string
	for b := dalf; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", errors.New("not a Daml-LF archive")
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return "", errors.New("not a Daml-LF archive")
		}
		v := b[n : n+m] // a well-formed value of its type
		switch {
		case num == archiveHashFunction && typ == protowire.VarintType:
			if f, _ := protowire.ConsumeVarint(v); f != 0 {
				return "", fmt.Errorf("unknown hash function %d", f)
			}
		case num == archivePayload && typ == protowire.BytesType:
			payload, _ = protowire.ConsumeBytes(v)
		case num == archiveHash && typ == protowire.BytesType:
			h, _ := protowire.ConsumeBytes(v)
			hash = string(h)
		}
		b = b[n+m:]
	}
	if len(payload) == 0 {
		return "", errors.New("not a Daml-LF archive: no payload")
	}
	if err := checkPayload(payload); err != nil {
		return "", err
	}
	sum := sha256.Sum256(payload)
	id := hex.EncodeToString(sum[:])
	if hash != id {
		return "", fmt.Errorf("the archive's hash %q is not the SHA-256 of its payload %s", hash, id)
	}
	return id, nil
}

func checkPayload(b []byte) error {
	minor, pkg := false, false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errors.New("the archive's payload is not a Daml-LF ArchivePayload")
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return errors.New("the archive's payload is not a Daml-LF ArchivePayload")
		}
		switch {
		case num == payloadMinor && typ == protowire.BytesType:
			minor = true
		case (num == payloadDamlLF1 || num == payloadDamlLF2) && typ == protowire.BytesType:
			pkg = true
		}
		b = b[m:]
	}
	if !minor || !pkg {
		return errors.New("the archive's payload is not a Daml-LF ArchivePayload (language version and package)")
	}
	return nil
}
