// Package store is validator-manager's repository over GORM: SQLite for the
// embedded default, PostgreSQL in production.
package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Store is the database of one server process.
type Store struct {
	db *gorm.DB
}

// Open connects to the database: driver is "postgres" (dsn is a PostgreSQL
// DSN) or "sqlite" (dsn is a file path, created with its directory).
func Open(driver, dsn string) (*Store, error) {
	var dialector gorm.Dialector
	switch driver {
	case "postgres":
		dialector = postgres.Open(dsn)
	case "sqlite":
		if err := os.MkdirAll(filepath.Dir(dsn), 0o700); err != nil {
			return nil, fmt.Errorf("database directory: %w", err)
		}
		// WAL lets readers run beside the writer; busy_timeout waits for the
		// writer's lock instead of failing at once.
		dialector = sqlite.Open("file:" + dsn + "?_journal_mode=WAL&_busy_timeout=5000&_foreign_keys=on")
	default:
		return nil, fmt.Errorf("database driver %q is not supported", driver)
	}
	db, err := gorm.Open(dialector, &gorm.Config{
		TranslateError: true,
		Logger:         logger.Discard,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", driver, err)
	}
	return &Store{db: db}, nil
}

// Ping tells whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// Close releases the connections.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Exec runs one statement outside any model (administration, tests).
func (s *Store) Exec(ctx context.Context, sql string) error {
	return s.db.WithContext(ctx).Exec(sql).Error
}
