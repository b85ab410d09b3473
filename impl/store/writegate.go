package store

import (
	"context"
	"database/sql/driver"
	"strings"
	"sync"

	"github.com/mattn/go-sqlite3"
)

// A SQLite database has one writer at a time. A writer that finds the lock
// taken sleeps in SQLite's busy handler (1, 2, 5 … up to 100 ms a try) and
// tries again, so under a burst of creates beside the leader's writes the
// unlucky ones lost try after try: a create's p99 was 1.4 s at 16 clients
// while its transaction takes a millisecond. The gate queues this process's
// writers in Go instead, in order of arrival (a channel's waiters are
// served first in, first out), and hands the lock on the moment it is left.
// Writers of other processes on the same file (replicas) still meet the
// busy handler, and wait for the gate's holder as before.
type writeGate chan struct{}

func (g writeGate) enter(ctx context.Context) error {
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g writeGate) leave() { <-g }

// gatedConnector opens the SQLite connections of one database, each gated.
type gatedConnector struct {
	dsn  string
	gate writeGate
}

func newGatedConnector(dsn string) *gatedConnector {
	return &gatedConnector{dsn: dsn, gate: make(writeGate, 1)}
}

func (c *gatedConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.Driver().Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &gatedConn{SQLiteConn: conn.(*sqlite3.SQLiteConn), gate: c.gate}, nil
}

func (c *gatedConnector) Driver() driver.Driver { return &sqlite3.SQLiteDriver{} }

// gatedConn passes every transaction (each takes the write lock at BEGIN:
// _txlock=immediate) and every statement outside one that is not a SELECT
// through the gate. database/sql uses a connection from one goroutine at a
// time, so inTx needs no lock.
type gatedConn struct {
	*sqlite3.SQLiteConn
	gate writeGate
	inTx bool
}

func (c *gatedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.gate.enter(ctx); err != nil {
		return nil, err
	}
	tx, err := c.SQLiteConn.BeginTx(ctx, opts)
	if err != nil {
		c.gate.leave()
		return nil, err
	}
	c.inTx = true
	return &gatedTx{Tx: tx, conn: c}, nil
}

// Begin is the pre-context form; database/sql calls BeginTx.
func (c *gatedConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *gatedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.inTx || reads(query) {
		return c.SQLiteConn.ExecContext(ctx, query, args)
	}
	if err := c.gate.enter(ctx); err != nil {
		return nil, err
	}
	defer c.gate.leave()
	return c.SQLiteConn.ExecContext(ctx, query, args)
}

// QueryContext gates a writing query (INSERT … RETURNING) until its rows
// are closed: SQLite steps the statement as the rows are read.
func (c *gatedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.inTx || reads(query) {
		return c.SQLiteConn.QueryContext(ctx, query, args)
	}
	if err := c.gate.enter(ctx); err != nil {
		return nil, err
	}
	rows, err := c.SQLiteConn.QueryContext(ctx, query, args)
	if err != nil {
		c.gate.leave()
		return nil, err
	}
	return &gatedRows{SQLiteRows: rows.(*sqlite3.SQLiteRows), leave: sync.OnceFunc(c.gate.leave)}, nil
}

func (c *gatedConn) Close() error {
	err := c.SQLiteConn.Close()
	if c.inTx { // closed with its transaction open: SQLite rolled it back
		c.inTx = false
		c.gate.leave()
	}
	return err
}

type gatedTx struct {
	driver.Tx
	conn *gatedConn
}

func (t *gatedTx) Commit() error   { return t.end(t.Tx.Commit()) }
func (t *gatedTx) Rollback() error { return t.end(t.Tx.Rollback()) }

func (t *gatedTx) end(err error) error {
	if t.conn.inTx {
		t.conn.inTx = false
		t.conn.gate.leave()
	}
	return err
}

type gatedRows struct {
	*sqlite3.SQLiteRows
	leave func()
}

func (r *gatedRows) Close() error {
	defer r.leave()
	return r.SQLiteRows.Close()
}

// reads tells a statement that cannot write (a SELECT) from one that may.
func reads(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n(")
	return len(q) >= 6 && strings.EqualFold(q[:6], "SELECT")
}
