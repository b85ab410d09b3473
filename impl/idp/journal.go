package idp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/validator-manager/validator-manager/impl/atomicfile"
)

// compactAfter is the fewest journal entries after which a change writes
// the users file whole instead (more when there are more users, so that
// the whole writes cost a constant share of each change).
const compactAfter = 1024

// Each change of a user is one line appended to the journal, so that a create
// costs the same with ten users or ten thousand. Its first line names the
// epoch of the users file it continues: a journal of another epoch is not
// replayed, nor a last line without its newline (never acknowledged).
type journal struct {
	path string
	// compactAfter is the fewest entries after which a change writes the
	// file whole (the constant; smaller in tests).
	compactAfter int
	epoch        string // of the users file it continues; "" while none is started
	entries      int    // appended since
}

// journalEntry is one line: the header (Epoch), or one change.
type journalEntry struct {
	Epoch  string     `json:"epoch,omitempty"`
	Add    *localUser `json:"add,omitempty"`
	Delete string     `json:"delete,omitempty"`
}

func (j *journal) open() bool { return j.epoch != "" }

// start begins the journal that continues the users file of epoch: a
// header alone, written atomically over the old journal. Where it fails,
// no journal is open and the next change writes the file whole.
func (j *journal) start(epoch string) {
	j.epoch, j.entries = "", 0
	header, _ := json.Marshal(journalEntry{Epoch: epoch})
	if atomicfile.Write(j.path, append(header, '\n'), 0o600) == nil {
		j.epoch = epoch
	}
}

// append adds e and syncs it. After a failure the journal is closed (its
// end may hold part of a line): the next change writes the file whole.
func (j *journal) append(e journalEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := j.appendSynced(append(line, '\n')); err != nil {
		j.epoch = ""
		return err
	}
	j.entries++
	return nil
}

// appendSynced appends b to the journal and syncs it.
func (j *journal) appendSynced(b []byte) error {
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	return atomicfile.WriteSynced(f, b)
}

// replay applies the journal that continues the users file of epoch to
// users, and keeps it open for appending only when it ends with a whole line.
func (j *journal) replay(epoch string, users []localUser) ([]localUser, error) {
	j.epoch, j.entries = "", 0
	raw, err := os.ReadFile(j.path)
	if errors.Is(err, fs.ErrNotExist) || epoch == "" {
		return users, nil
	}
	if err != nil {
		return nil, err
	}
	lines := bytes.Split(raw, []byte{'\n'})
	lines = lines[:len(lines)-1] // "" after the last newline, or a line cut short
	if len(lines) == 0 {
		return users, nil
	}
	var header journalEntry
	if err := json.Unmarshal(lines[0], &header); err != nil {
		return nil, fmt.Errorf("line 1: %w", err)
	}
	if header.Epoch != epoch {
		return users, nil
	}
	for i, line := range lines[1:] {
		var e journalEntry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+2, err)
		}
		switch {
		case e.Add != nil && !slices.ContainsFunc(users, func(u localUser) bool { return u.ID == e.Add.ID }):
			users = append(users, *e.Add)
		case e.Delete != "":
			users = slices.DeleteFunc(users, func(u localUser) bool { return u.ID == e.Delete })
		}
	}
	if bytes.HasSuffix(raw, []byte{'\n'}) {
		j.epoch, j.entries = epoch, len(lines)-1
	}
	return users, nil
}
