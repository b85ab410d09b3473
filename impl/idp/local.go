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

	"github.com/validator-manager/validator-manager/impl/atomicfile"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// usersFile is the local provider's state inside its directory, written
// whole; journalFile beside it holds the changes to its users since
// (journal.go).
const (
	usersFile   = "users.json"
	journalFile = "users.journal"
)

// Local is the identity provider of the embedded default: users kept in
// one JSON file and its journal, passwords only as hashes (hashPassword).
type Local struct {
	path    string
	journal journal
	now     func() time.Time

	mu      sync.Mutex // guards users, clients and the file
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
	// Installation is the id of the installation (the database's instance
	// id) whose users these are: a file from another installation is
	// refused at open instead of silently serving its users.
	Installation string `json:"installation,omitempty"`
	// Epoch names this writing of the file: the journal that continues it
	// carries the same.
	Epoch   string        `json:"epoch,omitempty"`
	Users   []localUser   `json:"users"`
	Clients []localClient `json:"clients,omitempty"`
}

// OpenLocal opens (creating) the local identity provider in dir, e.g.
// <dataDir>/idp, for no particular installation.
func OpenLocal(dir string) (*Local, error) { return OpenLocalWith(dir, LocalOptions{}) }

// LocalOptions say what the data directory expects of the users file.
type LocalOptions struct {
	// Installation is written into the file: a file of another
	// installation is refused, one written before installations were
	// recorded is adopted.
	Installation string
	// Expected says that the file must exist (the database holds
	// validators, whose wallet users it kept): a missing one is refused.
	Expected bool
	// UIs are where the validators' UIs are, their clients' redirect URIs.
	UIs UIs
}

// ErrRefused marks a users file refused at open (damaged, another
// installation's, missing where expected): the operator restores it or
// starts the provider afresh.
var ErrRefused = errors.New("users file refused")

// refusal is a refused file's error: its message, and ErrRefused.
type refusal struct{ error }

func (refusal) Is(target error) bool { return target == ErrRefused }

// OpenLocalWith opens the local identity provider in dir: a file that is
// empty, null, without its users, of another installation or missing where
// expected is refused, naming the file and what to do. The file is written
// whole at once, with the changes its journal holds: a new provider's, so
// that its absence later means it was lost.
func OpenLocalWith(dir string, o LocalOptions) (*Local, error) {
	if err := CheckUITemplate(o.UIs.Template); err != nil {
		return nil, fmt.Errorf("local identity provider: UI address: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("local identity provider: %w", err)
	}
	l := &Local{path: filepath.Join(dir, usersFile), journal: journal{path: filepath.Join(dir, journalFile), compactAfter: compactAfter}, now: time.Now, installation: o.Installation, uis: o.UIs}
	// A temporary file is left only by a process killed between its
	// creation and its rename or removal; it may hold password hashes, so
	// it goes.
	for _, pattern := range []string{"." + usersFile + "-*", "." + journalFile + "-*", ".probe-*"} {
		leftovers, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range leftovers {
			os.Remove(f)
		}
	}
	const todo = "restore it from a backup, or start the identity provider afresh with --start-afresh=idp (the file is set aside; its users are then gone)"
	raw, err := os.ReadFile(l.path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && o.Expected:
		return nil, refusal{fmt.Errorf("local identity provider: %s is missing, but the database holds validators whose wallet users it kept; %s", l.path, todo)}
	case errors.Is(err, fs.ErrNotExist):
		if err := l.save(nil, nil); err != nil {
			return nil, fmt.Errorf("local identity provider: %s: %w", l.path, err)
		}
		return l, nil
	case err != nil:
		return nil, fmt.Errorf("local identity provider: %w", err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, refusal{fmt.Errorf("local identity provider: %s is damaged: %w; %s", l.path, err, todo)}
	}
	if _, ok := probe["users"]; !ok {
		return nil, refusal{fmt.Errorf("local identity provider: %s is empty, null or not a users file (it has no \"users\"); %s", l.path, todo)}
	}
	var st localState
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, refusal{fmt.Errorf("local identity provider: %s is damaged: %w; %s", l.path, err, todo)}
	}
	if o.Installation != "" && st.Installation != "" && st.Installation != o.Installation {
		return nil, refusal{fmt.Errorf("local identity provider: %s belongs to installation %s, the database to %s: it is another installation's file; %s", l.path, st.Installation, o.Installation, todo)}
	}
	if l.installation == "" {
		l.installation = st.Installation
	}
	users, err := l.journal.replay(st.Epoch, st.Users)
	if err != nil {
		return nil, refusal{fmt.Errorf("local identity provider: %s is damaged: %w; %s", l.journal.path, err, todo)}
	}
	l.users, l.clients = users, st.Clients
	if err := l.save(l.users, l.clients); err != nil {
		return nil, fmt.Errorf("local identity provider: %s: %w", l.path, err)
	}
	return l, nil
}

// HasUser tells whether the provider holds the user with id.
func (l *Local) HasUser(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.users, func(x localUser) bool { return x.ID == id })
}

// UserExists is HasUser as the intent controller asks it (drift).
func (l *Local) UserExists(_ context.Context, id string) (bool, error) { return l.HasUser(id), nil }

// HasClient tells whether the client of clientID exists.
func (l *Local) HasClient(clientID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.clients, func(c localClient) bool { return c.ClientID == clientID })
}

// CreateWalletUser creates <validator>_walletuser with the temporary
// password given; only its hash is kept. A user of that name that
// carries claim is adopted, one that does not is domain.ErrConflict (as
// Keycloak's).
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
		CreatedAt:    l.now().UTC(),
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.IndexFunc(l.users, func(x localUser) bool { return x.Username == username }); i >= 0 {
		if claim == "" || l.users[i].Claim != claim {
			return domain.CreatedUser{}, domain.Conflict("identity provider user %q already exists", username)
		}
		return domain.CreatedUser{ID: l.users[i].ID, Username: username, TemporaryPassword: password}, nil
	}
	next := append(slices.Clip(l.users), u)
	if err := l.change(next, journalEntry{Add: &u}); err != nil {
		return domain.CreatedUser{}, fmt.Errorf("identity provider: create user %q: %w", username, err)
	}
	l.users = next
	return domain.CreatedUser{ID: u.ID, Username: username, TemporaryPassword: password}, nil
}

// DeleteUser removes a user by id; an absent user is not an error.
func (l *Local) DeleteUser(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
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

// DeleteWalletUser removes <validator>_walletuser if it carries claim; an
// absent user, or one of another claim, is left as it is.
func (l *Local) DeleteWalletUser(ctx context.Context, validator, claim string) error {
	username, err := walletUsername(validator)
	if err != nil {
		return err
	}
	l.mu.Lock()
	i := slices.IndexFunc(l.users, func(x localUser) bool { return x.Username == username })
	id := ""
	if i >= 0 && claim != "" && l.users[i].Claim == claim {
		id = l.users[i].ID
	}
	l.mu.Unlock()
	if id == "" {
		return nil
	}
	return l.DeleteUser(ctx, id)
}

// CheckPassword verifies username's password against its hash (the
// sandbox's password grant) and returns the user's id, the subject of its
// tokens as in Keycloak. A temporary password is accepted: the local
// provider has no way to change it. An unknown user or a wrong password is
// a domain error of code CodeUnauthenticated, the same for both.
func (l *Local) CheckPassword(_ context.Context, username, password string) (string, error) {
	l.mu.Lock()
	i := slices.IndexFunc(l.users, func(x localUser) bool { return x.Username == username })
	hash, id := "", ""
	if i >= 0 {
		hash, id = l.users[i].PasswordHash, l.users[i].ID
	}
	l.mu.Unlock()
	if !passwordMatches(hash, password) || i < 0 {
		return "", &domain.Error{Code: domain.CodeUnauthenticated, Message: "invalid user credentials"}
	}
	return id, nil
}

// The only passwords this provider holds are the temporary passwords the
// server derives (keyring.TemporaryPassword: 24 characters drawn from 90,
// about 150 bits); the provider cannot change them. A slow hash (bcrypt,
// PBKDF2) protects passwords people choose, which a guess can find; against
// 150 random bits a SHA-256 is as strong, and costs a microsecond instead of
// bcrypt's 50 ms of CPU per user, which made the embedded default's wallet
// users most of the server's CPU per create. Files written before keep
// their bcrypt hashes, which still verify.
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
// file whole when the journal holds as many entries as there are users
// (at least compactAfter): a change costs the same at any number of users.
func (l *Local) change(next []localUser, e journalEntry) error {
	if !l.journal.open() || l.journal.entries >= max(l.journal.compactAfter, len(next)) {
		return l.save(next, l.clients)
	}
	return l.journal.append(e)
}

// save writes users and clients atomically (a temporary file in the same
// directory, created 0600, synced, then renamed over the old one) under a
// new epoch, and starts the journal that continues it. Once the file is
// renamed the change is saved; a journal that could not be started only
// makes the next change write the file whole again.
func (l *Local) save(users []localUser, clients []localClient) error {
	if users == nil {
		users = []localUser{} // "users": [] tells an empty provider from a null file
	}
	epoch := uuid.NewString()
	raw, err := json.MarshalIndent(localState{Installation: l.installation, Epoch: epoch, Users: users, Clients: clients}, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomically(l.path, raw); err != nil {
		return err
	}
	l.journal.start(epoch)
	return nil
}

// writeAtomically replaces path with raw, 0600 (atomicfile.Write: a
// temporary ".<name>-*" beside it, removed at the next open if a kill
// leaves it).
func writeAtomically(path string, raw []byte) error { return atomicfile.Write(path, raw, 0o600) }

// Ping reports whether a change can be saved now (the health of the
// embedded default's identity provider store): a probe file is written,
// synced and removed in the provider's directory, and the journal opened
// for appending; where a change failed to be saved or the journal cannot
// be opened, the file is written whole instead, which starts a new one.
func (l *Local) Ping(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := probe(filepath.Dir(l.path))
	if err == nil && l.journal.open() && l.journal.check() != nil {
		l.journal.epoch = "" // lost or unwritable: the file is written whole below
	}
	if err == nil && !l.journal.open() {
		err = l.save(l.users, l.clients)
	}
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
	if _, err := f.Write([]byte{0}); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
