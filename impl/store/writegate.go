package store

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	"golang.org/x/sync/semaphore"
	"gorm.io/gorm"
)

// gatedPool is GORM's connection pool of a SQLite database: every transaction
// and every Exec outside one pass, in order of arrival, through a gate (a
// FIFO semaphore of one), because SQLite's busy handler retries a waiting
// writer with growing sleeps and lets later ones overtake it. Queries outside
// a transaction are reads and are not gated: the writes with RETURNING run
// in GORM's default transaction (SkipDefaultTransaction would ungate them).
type gatedPool struct {
	*sql.DB
	gate *semaphore.Weighted
}

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
