// Package store is validator-manager's repository over GORM: SQLite for the
// embedded default, PostgreSQL in production.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	sqlite3 "github.com/mattn/go-sqlite3"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sys/unix"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Store is the database of one server process.
type Store struct {
	db *gorm.DB
	// dialect is "sqlite" or "postgres", for the few statements that differ.
	dialect string
	// sqlDB is db's pool, for the list's own reads (listindex.go).
	sqlDB *sql.DB
	// list is the list's rows in memory (listindex.go).
	list listRows
	// where names the database in errors: its file, or "the PostgreSQL
	// database" (a DSN may hold a password).
	where string
	// file is the SQLite database's path ("" on PostgreSQL).
	file string
}

// Pool is the connection pool's settings (database/sql's; zero: no limit).
type Pool struct {
	MaxOpen     int
	MaxIdle     int
	MaxLifetime time.Duration
	MaxIdleTime time.Duration
}

// DefaultPool keeps as many idle connections as it opens, so a burst or a
// health check reuses connections instead of dialling (database/sql keeps 2).
var DefaultPool = Pool{MaxOpen: 10, MaxIdle: 10, MaxLifetime: 30 * time.Minute, MaxIdleTime: 10 * time.Minute}

// Open is OpenWith and the default pool.
func Open(driver, dsn string) (*Store, error) { return OpenWith(driver, dsn, DefaultPool) }

// OpenWith connects to the database and brings its schema up to date: driver is
// "postgres" (dsn is a PostgreSQL DSN) or "sqlite" (dsn is a file path,
// created with its directory).
func OpenWith(driver, dsn string, pool Pool) (*Store, error) {
	dialector, err := dialectorOf(driver, dsn)
	if err != nil {
		return nil, err
	}
	db, err := openGorm(dialector)
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", driver, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, sqlDB: sqlDB, dialect: driver, where: "the PostgreSQL database"}
	s.list.reading = make(chan struct{}, 1)
	if driver == "sqlite" {
		s.where, s.file = "database "+dsn, dsn
	}
	sqlDB.SetMaxOpenConns(pool.MaxOpen)
	sqlDB.SetMaxIdleConns(pool.MaxIdle)
	sqlDB.SetConnMaxLifetime(pool.MaxLifetime)
	sqlDB.SetConnMaxIdleTime(pool.MaxIdleTime)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := migrate(ctx, db, driver, math.MaxInt64); err != nil {
		s.Close()
		return nil, fmt.Errorf("migrate %s database: %w", driver, err)
	}
	if err := markUnknownAudit(ctx, db); err != nil {
		s.Close()
		return nil, fmt.Errorf("audit log of the %s database: %w", driver, err)
	}
	// Every list page reads the generation first: prepared once (go-sqlite3
	// would prepare it afresh on each call).
	if s.list.gen, err = sqlDB.PrepareContext(ctx, "SELECT g, removed FROM list_generation"); err != nil {
		s.Close()
		return nil, fmt.Errorf("prepare the list's generation read: %w", err)
	}
	return s, nil
}

// dialectorOf is GORM's dialector of a driver and DSN (a file path on SQLite).
func dialectorOf(driver, dsn string) (gorm.Dialector, error) {
	switch driver {
	case "postgres":
		return postgres.Open(dsn), nil
	case "sqlite":
		if err := os.MkdirAll(filepath.Dir(dsn), 0o700); err != nil {
			return nil, fmt.Errorf("database directory: %w", err)
		}
		if err := createPrivate(dsn); err != nil {
			return nil, err
		}
		// Run on every pooled connection. _txlock=immediate takes the write
		// lock at BEGIN: a deferred transaction that reads, then writes, gets
		// SQLITE_BUSY without waiting out busy_timeout.
		db, err := sql.Open("sqlite3", "file:"+dsn+"?_journal_mode=WAL&_busy_timeout=5000&_foreign_keys=on&_txlock=immediate")
		if err != nil {
			return nil, err
		}
		return sqlite.New(sqlite.Config{Conn: &gatedPool{DB: db, gate: semaphore.NewWeighted(1)}}), nil
	default:
		return nil, fmt.Errorf("database driver %q is not supported", driver)
	}
}

// createPrivate creates the SQLite file (or tightens an existing one) readable
// by its owner only: SQLite gives its -wal and -shm files the same mode.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("database file %s: not writable by this user (check the owner and mode of %s): %w", path, filepath.Dir(path), err)
		}
		return fmt.Errorf("database file %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			return fmt.Errorf("database file %s: %w", path, err)
		}
	}
	return nil
}

// openGorm retries for a few seconds when servers starting at once on a new
// SQLite file race to switch it to WAL, a lock no busy timeout waits for.
func openGorm(dialector gorm.Dialector) (*gorm.DB, error) {
	for attempt := 0; ; attempt++ {
		db, err := gorm.Open(dialector, &gorm.Config{
			TranslateError: true,
			Logger:         logger.Discard,
			NowFunc:        now,
		})
		var lite sqlite3.Error
		if err == nil || attempt == 50 || !errors.As(err, &lite) || (lite.Code != sqlite3.ErrBusy && lite.Code != sqlite3.ErrLocked) {
			return db, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// now is the store's clock: UTC, at the microsecond PostgreSQL keeps, so a
// timestamp reads back equal to the one written on both databases.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// stamp normalises a caller's timestamp the same way.
func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// bounded is the context of a read whose cost is bounded (a page): not
// cancellable on SQLite, where go-sqlite3 steps a cancellable query's rows in
// a goroutine of its own, a cost far above such a read's millisecond or two.
func (s *Store) bounded(ctx context.Context) context.Context {
	if s.dialect == "sqlite" {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// Ping tells whether the database can take writes now, by reads alone so
// that it never waits behind the writers it reports on; a standby, a
// read-only session or file and a full disk still answer reads, so each is
// asked about.
func (s *Store) Ping(ctx context.Context) error {
	db := s.db.WithContext(ctx)
	if s.dialect == "postgres" {
		var standby bool
		var readOnly string
		if err := db.Raw("SELECT pg_is_in_recovery(), current_setting('transaction_read_only')").Row().Scan(&standby, &readOnly); err != nil {
			return fmt.Errorf("%s does not answer: %w", s.where, err)
		}
		switch {
		case standby:
			return fmt.Errorf("%s cannot be written: it is a read-only standby in recovery", s.where)
		case readOnly == "on":
			return fmt.Errorf("%s cannot be written: its transactions are read-only (default_transaction_read_only)", s.where)
		}
		return nil
	}
	var queryOnly int
	if err := db.Raw("PRAGMA query_only").Row().Scan(&queryOnly); err != nil {
		return fmt.Errorf("%s does not answer: %w", s.where, err)
	}
	if queryOnly != 0 {
		return fmt.Errorf("%s cannot be written: the connection is read-only (query_only)", s.where)
	}
	if err := unix.Access(s.file, unix.W_OK); err != nil {
		return fmt.Errorf("%s cannot be written: %w", s.where, err)
	}
	var fsStat unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(s.file), &fsStat); err != nil {
		return fmt.Errorf("%s: the space left on its disk cannot be read: %w", s.where, err)
	}
	if free := fsStat.Bavail * uint64(fsStat.Bsize); free < minFreeBytes {
		return fmt.Errorf("%s cannot be written: the disk holding it is full (%d bytes free)", s.where, free)
	}
	return nil
}

// minFreeBytes is the free space below which SQLite is taken to be unable to
// write: a transaction appends whole 4 KiB pages to the WAL.
const minFreeBytes = 1 << 20

// Close releases the connections.
func (s *Store) Close() error { return s.sqlDB.Close() }

// Exec runs one statement outside any model (administration, tests).
func (s *Store) Exec(ctx context.Context, sql string) error {
	return s.db.WithContext(ctx).Exec(sql).Error
}

// Recorded is the database's installation id ("" while it has none) and
// whether it holds validators, without making either: start-up checks the
// data directory's other stores against it.
func (s *Store) Recorded(ctx context.Context) (installation string, validators bool, err error) {
	db := s.db.WithContext(ctx)
	if err := db.Raw("SELECT id FROM instance WHERE singleton = 1").Scan(&installation).Error; err != nil {
		return "", false, translate(err, "instance id", "")
	}
	var n int64
	if err := db.Raw("SELECT COUNT(*) FROM (SELECT 1 FROM validators LIMIT 1) v").Scan(&n).Error; err != nil {
		return "", false, translate(err, "validators", "")
	}
	return installation, n > 0, nil
}

// Instance is the database's installation id, made the first time it is
// asked for (concurrent first calls agree).
func (s *Store) Instance(ctx context.Context) (string, error) {
	db := s.db.WithContext(ctx)
	err := db.Exec("INSERT INTO instance (singleton, id) VALUES (1, ?) ON CONFLICT (singleton) DO NOTHING", uuid.NewString()).Error
	if err != nil {
		return "", translate(err, "instance id", "")
	}
	var id string
	if err := db.Raw("SELECT id FROM instance WHERE singleton = 1").Scan(&id).Error; err != nil {
		return "", translate(err, "instance id", "")
	}
	return id, nil
}
