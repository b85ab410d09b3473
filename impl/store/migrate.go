package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"gorm.io/gorm"
)

// Migrations are NNNN_name.<dialect>.sql: one file per dialect and version,
// because SQLite and PostgreSQL differ in timestamp types and identity columns.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int64
	file    string
	sql     string
}

// migrationLock is the key of the PostgreSQL advisory lock that serialises
// servers starting at once on the same database.
const migrationLock = 0x766d5f736368656d // "vm_schem"

var migrationTable = map[string]string{
	"sqlite":   `CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT NOT NULL PRIMARY KEY, applied_at TIMESTAMP NOT NULL)`,
	"postgres": `CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT NOT NULL PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)`,
}

// migrations lists the embedded migrations of one dialect by version.
func migrations(dialect string) ([]migration, error) {
	files, err := fs.Glob(migrationFiles, "migrations/*."+dialect+".sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	seen := map[int64]string{}
	for _, file := range files {
		base := strings.TrimPrefix(file, "migrations/")
		digits, _, ok := strings.Cut(base, "_")
		version, err := strconv.ParseInt(digits, 10, 64)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version and '_'", base)
		}
		if other, dup := seen[version]; dup {
			return nil, fmt.Errorf("migrations %s and %s have the same version", other, base)
		}
		seen[version] = base
		text, err := migrationFiles.ReadFile(file)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: version, file: base, sql: string(text)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrate applies the migrations not yet recorded in schema_migrations, each
// in its own transaction, which an advisory lock (PostgreSQL) or the write
// lock (SQLite) serialises across servers starting at once.
func migrate(ctx context.Context, db *gorm.DB, dialect string, upTo int64) error {
	ms, err := migrations(dialect)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.version > upTo {
			break
		}
		err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if dialect == "postgres" {
				if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", migrationLock).Error; err != nil {
					return fmt.Errorf("lock: %w", err)
				}
			}
			if err := tx.Exec(migrationTable[dialect]).Error; err != nil {
				return fmt.Errorf("create schema_migrations: %w", err)
			}
			var applied int64
			if err := tx.Raw("SELECT COUNT(*) FROM schema_migrations WHERE version = ?", m.version).Scan(&applied).Error; err != nil {
				return err
			}
			if applied > 0 {
				return nil
			}
			if err := tx.Exec(m.sql).Error; err != nil {
				return err
			}
			return tx.Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", m.version, now()).Error
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.file, err)
		}
	}
	return nil
}
