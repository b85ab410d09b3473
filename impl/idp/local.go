package idp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sys/unix"

	"github.com/validator-manager/validator-manager/impl/atomicfile"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// The local provider's files: its state, written whole; the journal of the
// changes since (journal.go); the lock file (Local.lock).
const (
	usersFile   = "users.json"
	journalFile = "users.journal"
	lockFile    = "users.lock"
)

// Local is the identity provider of the embedded default: users kept in
// one JSON file and its journal, passwords only as hashes (hashPassword).
type Local struct {
	path    string
	journal journal

	mu sync.Mutex // with the lock file (lock), guards users, clients, seen and the files
	// seen are the file and its journal as this process last read or wrote
	// them: where they differ now, another process changed them (locked).
	seen    [2]os.FileInfo
	users   []localUser
	clients []localClient
	// endpoints are where the realm is served (SetEndpoints).
	endpoints atomic.Pointer[domain.AuthEndpoints]
	// installation is written into the file (localState.Installation).
	installation string
	// uis are where the validators' UIs are (LocalOptions.UIs).
	uis UIs
}

// localUser is one user as stored on disk.
type localUser struct {
	ID           string    `json:"id"`
	Username     string    `json:"username"`
	PasswordHash string    `json:"passwordHash"`
	Temporary    bool      `json:"temporary"`
	Claim        string    `json:"claim,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
}

type localState struct {
	// Installation is the database's instance id: a file of another
	// installation is refused instead of silently serving its users.
	Installation string `json:"installation,omitempty"`
	// Epoch names this writing of the file: the journal that continues it
	// carries the same.
	Epoch   string        `json:"epoch,omitempty"`
	Users   []localUser   `json:"users"`
	Clients []localClient `json:"clients,omitempty"`
}

// LocalOptions say what the data directory expects of the users file.
type LocalOptions struct {
	// Installation is written into the file: a file of another
	// installation is refused, one that names none is adopted.
	Installation string
	// Expected says that the file must exist (the database holds
	// validators, whose wallet users it kept): a missing one is refused.
	Expected bool
	// UIs are where the validators' UIs are, their clients' redirect URIs.
	UIs UIs
}

// ErrRefused marks a users file refused at open: the operator restores it or
// starts the provider afresh.
var ErrRefused = errors.New("users file refused")

// refusal is a refused file's error: its message, and ErrRefused.
type refusal struct{ error }

func (refusal) Is(target error) bool { return target == ErrRefused }

// OpenLocal opens (creating) the local identity provider in dir, refusing a
// file that load refuses or that is missing where expected. The file is
// written whole at once, so that its absence later means it was lost.
func OpenLocal(dir string, o LocalOptions) (*Local, error) {
	if err := CheckUITemplate(o.UIs.Template); err != nil {
		return nil, fmt.Errorf("local identity provider: UI address: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("local identity provider: %w", err)
	}
	l := &Local{path: filepath.Join(dir, usersFile), journal: journal{path: filepath.Join(dir, journalFile), compactAfter: compactAfter}, installation: o.Installation, uis: o.UIs}
	unlock, err := l.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Temporary files left by a killed process may hold password hashes;
	// another process's are not there while this one holds the lock.
	for _, pattern := range []string{"." + usersFile + "-*", "." + journalFile + "-*", ".probe-*"} {
		leftovers, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range leftovers {
			os.Remove(f)
		}
	}
	switch err := l.load(); {
	case errors.Is(err, fs.ErrNotExist) && o.Expected:
		return nil, refusal{fmt.Errorf("local identity provider: %s is missing, but the database holds validators whose wallet users it kept; %s", l.path, todo)}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if err := l.save(l.users, l.clients); err != nil {
		return nil, fmt.Errorf("local identity provider: %s: %w", l.path, err)
	}
	l.seen = l.stat()
	return l, nil
}

// todo is what the operator does about a refused file.
const todo = "restore it from a backup, or start the identity provider afresh with --start-afresh=idp (the file is set aside; its users are then gone)"

// load reads the file and replays its journal, refusing a file that is
// empty, null, without its users or of another installation.
func (l *Local) load() error {
	raw, err := os.ReadFile(l.path)
	if err != nil {
		return fmt.Errorf("local identity provider: %w", err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return refusal{fmt.Errorf("local identity provider: %s is damaged: %w; %s", l.path, err, todo)}
	}
	if _, ok := probe["users"]; !ok {
		return refusal{fmt.Errorf("local identity provider: %s is empty, null or not a users file (it has no \"users\"); %s", l.path, todo)}
	}
	var st localState
	if err := json.Unmarshal(raw, &st); err != nil {
		return refusal{fmt.Errorf("local identity provider: %s is damaged: %w; %s", l.path, err, todo)}
	}
	if l.installation != "" && st.Installation != "" && st.Installation != l.installation {
		return refusal{fmt.Errorf("local identity provider: %s belongs to installation %s, the database to %s: it is another installation's file; %s", l.path, st.Installation, l.installation, todo)}
	}
	if l.installation == "" {
		l.installation = st.Installation
	}
	users, err := l.journal.replay(st.Epoch, st.Users)
	if err != nil {
		return refusal{fmt.Errorf("local identity provider: %s is damaged: %w; %s", l.journal.path, err, todo)}
	}
	l.users, l.clients = users, st.Clients
	return nil
}

// lock takes the provider's lock for one operation: the mutex within the
// process, and a flock of the lock file across the processes that share the
// directory.
func (l *Local) lock() (unlock func(), err error) {
	l.mu.Lock()
	f, err := os.OpenFile(filepath.Join(filepath.Dir(l.path), lockFile), os.O_RDONLY|os.O_CREATE, 0o600)
	if err == nil {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		for err == unix.EINTR {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		l.mu.Unlock()
		return nil, fmt.Errorf("local identity provider: lock: %w", err)
	}
	return func() { f.Close(); l.mu.Unlock() }, nil // closing releases the flock
}

// locked runs f under the lock on the state as stored, read again first
// where another process changed it, so that f never works on a stale copy.
func (l *Local) locked(f func() error) error {
	unlock, err := l.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if l.changed() {
		if err := l.load(); err != nil {
			return err
		}
	}
	err = f()
	l.seen = l.stat()
	return err
}

// stat is the file and its journal now (nil where missing).
func (l *Local) stat() (now [2]os.FileInfo) {
	for i, path := range []string{l.path, l.journal.path} {
		now[i], _ = os.Stat(path)
	}
	return now
}

// changed tells whether another process wrote the file (another inode) or
// its journal (another size) since this one last read or wrote them. A
// missing file leaves the state as this process holds it, the only copy.
func (l *Local) changed() bool {
	now := l.stat()
	same := func(a, b os.FileInfo) bool {
		return b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
	}
	regular := func(fi os.FileInfo) bool { return fi != nil && fi.Mode().IsRegular() }
	return regular(now[0]) && (!same(now[0], l.seen[0]) || (regular(now[1]) && !same(now[1], l.seen[1])))
}

// HasUser tells whether the provider holds the user with id
// (false where the file cannot be read: UserExists says why).
func (l *Local) HasUser(id string) bool {
	ok, _ := l.UserExists(context.Background(), id)
	return ok
}

// UserExists is HasUser as the intent controller asks it (drift).
func (l *Local) UserExists(_ context.Context, id string) (ok bool, err error) {
	err = l.locked(func() error {
		ok = slices.ContainsFunc(l.users, func(x localUser) bool { return x.ID == id })
		return nil
	})
	return ok, err
}

// HasClient tells whether the client of clientID exists (false where the
// file cannot be read).
func (l *Local) HasClient(clientID string) bool {
	c, _ := l.client(clientID)
	return c != nil
}

// CreateWalletUser creates <validator>_walletuser with the temporary password
// given, as Keycloak's does; only its hash is kept.
func (l *Local) CreateWalletUser(ctx context.Context, validator, claim, password string) (domain.CreatedUser, error) {
	username, err := walletUsername(validator)
	if err != nil {
		return domain.CreatedUser{}, err
	}
	if password == "" {
		return domain.CreatedUser{}, domain.Invalid("password", "a temporary password is required to create %q", username)
	}
	hash := hashPassword(password)
	if err := ctx.Err(); err != nil {
		return domain.CreatedUser{}, fmt.Errorf("identity provider: create user %q: %w", username, err)
	}
	u := localUser{
		ID:           uuid.NewString(),
		Username:     username,
		PasswordHash: hash,
		Temporary:    true,
		Claim:        claim,
		CreatedAt:    time.Now().UTC(),
	}

	err = l.locked(func() error {
		if i := slices.IndexFunc(l.users, func(x localUser) bool { return x.Username == username }); i >= 0 {
			if claim == "" || l.users[i].Claim != claim {
				return domain.Conflict("identity provider user %q already exists", username)
			}
			u.ID = l.users[i].ID
			return nil
		}
		next := append(slices.Clip(l.users), u)
		if err := l.change(next, journalEntry{Add: &u}); err != nil {
			return fmt.Errorf("identity provider: create user %q: %w", username, err)
		}
		l.users = next
		return nil
	})
	if err != nil {
		return domain.CreatedUser{}, err
	}
	return domain.CreatedUser{ID: u.ID, Username: username, TemporaryPassword: password}, nil
}

// DeleteUser removes a user by id; an absent user is not an error.
func (l *Local) DeleteUser(_ context.Context, id string) error {
	return l.locked(func() error { return l.deleteUser(id) })
}

// deleteUser is DeleteUser under the lock.
func (l *Local) deleteUser(id string) error {
	i := slices.IndexFunc(l.users, func(x localUser) bool { return x.ID == id })
	if i < 0 {
		return nil
	}
	next := slices.Delete(slices.Clone(l.users), i, i+1)
	if err := l.change(next, journalEntry{Delete: id}); err != nil {
		return fmt.Errorf("identity provider: delete user %s: %w", id, err)
	}
	l.users = next
	return nil
}

// CheckPassword verifies username's password (the sandbox's password grant)
// and returns the user's id. A temporary password is accepted: the local
// provider has no way to change it. An unknown user or a wrong password is
// the same domain error of code CodeUnauthenticated.
func (l *Local) CheckPassword(_ context.Context, username, password string) (string, error) {
	hash, id := "", ""
	err := l.locked(func() error {
		if i := slices.IndexFunc(l.users, func(x localUser) bool { return x.Username == username }); i >= 0 {
			hash, id = l.users[i].PasswordHash, l.users[i].ID
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if !passwordMatches(hash, password) || id == "" {
		return "", &domain.Error{Code: domain.CodeUnauthenticated, Message: "invalid user credentials"}
	}
	return id, nil
}

// The only passwords this provider holds are the server's temporary ones
// (keyring.TemporaryPassword, about 150 random bits), against which a SHA-256
// is as strong as a slow hash; bcrypt hashes of older files still verify.
const sha256Prefix = "sha256:"

func hashPassword(password string) string {
	sum := sha256.Sum256([]byte(password))
	return sha256Prefix + hex.EncodeToString(sum[:])
}

// passwordMatches compares in constant time, and hashes for an unknown
// user (hash "") too, which matches nothing: both refusals take as long.
func passwordMatches(hash, password string) bool {
	if strings.HasPrefix(hash, "$2") {
		return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
	}
	got := hashPassword(password)
	return subtle.ConstantTimeCompare([]byte(hash), []byte(got)) == 1 && hash != ""
}

// change makes next the users, recording e in the journal, or writing the
// file whole when the journal holds as many entries as there are users.
func (l *Local) change(next []localUser, e journalEntry) error {
	if !l.journal.open() || l.journal.entries >= max(l.journal.compactAfter, len(next)) {
		return l.save(next, l.clients)
	}
	return l.journal.append(e)
}

// save writes users and clients atomically under a new epoch, and starts the
// journal that continues it (where it cannot, the next change writes the
// file whole again).
func (l *Local) save(users []localUser, clients []localClient) error {
	if users == nil {
		users = []localUser{} // "users": [] tells an empty provider from a null file
	}
	epoch := uuid.NewString()
	raw, err := json.MarshalIndent(localState{Installation: l.installation, Epoch: epoch, Users: users, Clients: clients}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(l.path, raw, 0o600); err != nil {
		return err
	}
	l.journal.start(epoch)
	return nil
}

// Ping reports whether a change can be saved now: a probe file is written in
// the provider's directory, and the journal opened for appending; where the
// journal is lost or unwritable, the file is written whole, starting a new one.
func (l *Local) Ping(context.Context) error {
	err := l.locked(func() error {
		err := probe(filepath.Dir(l.path))
		if err == nil && l.journal.open() && l.journal.appendSynced(nil) != nil {
			l.journal.epoch = "" // lost or unwritable: the file is written whole below
		}
		if err == nil && !l.journal.open() {
			err = l.save(l.users, l.clients)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("local identity provider: %s cannot be written: %w", l.path, err)
	}
	return nil
}

// probe writes, syncs and removes a file of one byte in dir.
func probe(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	return atomicfile.WriteSynced(f, []byte{0})
}
