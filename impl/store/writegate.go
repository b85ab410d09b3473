package store

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	"golang.org/x/sync/semaphore"
	"gorm.io/gorm"
)

// A SQLite database has one writer at a time. A writer that finds the lock
// taken sleeps in SQLite's busy handler (1, 2, 5 … up to 100 ms a try) and
// tries again, so under a burst of creates beside the leader's writes the
// unlucky ones lost try after try: a create's p99 was 1.4 s at 16 clients
// while its transaction takes a millisecond. The gate (a semaphore of one,
// which serves its waiters first in, first out) queues this process's
// writers in Go instead, in order of arrival, before they take a pooled
// connection, and hands the lock on the moment it is left. Writers of other
// processes on the same file (replicas) still meet the busy handler.

// gatedPool is GORM's connection pool of a SQLite database: every
// transaction (each takes the write lock at BEGIN: _txlock=immediate; GORM
// runs each create, update and delete in one) and every Exec outside one
// passes through the gate. A query outside a transaction is a read, or a
// write with RETURNING that GORM was told to run without a transaction,
// which the store does not do; it is not gated.
type gatedPool struct {
	*sql.DB
	gate *semaphore.Weighted
}

func newGatedPool(db *sql.DB) *gatedPool { return &gatedPool{DB: db, gate: semaphore.NewWeighted(1)} }

func (p *gatedPool) leave() { p.gate.Release(1) }

// GetDBConn is the pool's *sql.DB (gorm.DB.DB).
func (p *gatedPool) GetDBConn() (*sql.DB, error) { return p.DB, nil }

// BeginTx makes it a gorm.ConnPoolBeginner: the transaction holds the gate
// until it commits or rolls back.
func (p *gatedPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	if err := p.gate.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	tx, err := p.DB.BeginTx(ctx, opts)
	if err != nil {
		p.leave()
		return nil, err
	}
	return &gatedTx{Tx: tx, leave: sync.OnceFunc(p.leave)}, nil
}

func (p *gatedPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if reads(query) {
		return p.DB.ExecContext(ctx, query, args...)
	}
	if err := p.gate.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	defer p.leave()
	return p.DB.ExecContext(ctx, query, args...)
}

// gatedTx is a transaction that leaves the gate when it ends, however it
// ends (a failed commit ends it too).
type gatedTx struct {
	*sql.Tx
	leave func()
}

func (t *gatedTx) Commit() error {
	defer t.leave()
	return t.Tx.Commit()
}

func (t *gatedTx) Rollback() error {
	defer t.leave()
	return t.Tx.Rollback()
}

// reads tells a statement that cannot write (a SELECT) from one that may.
func reads(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n(")
	return len(q) >= 6 && strings.EqualFold(q[:6], "SELECT")
}
