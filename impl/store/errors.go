package store

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// translate turns a database error into the domain error callers act on; it
// is the one place where GORM's errors are interpreted. what names the row
// (`validator "x"`), validator the row its foreign key points to, if any.
func translate(err error, what, validator string) error {
	var translated *domain.Error
	var named *namedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &translated), errors.As(err, &named):
		return err
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return domain.Conflict("%s already exists", what)
	case errors.Is(err, gorm.ErrRecordNotFound):
		return domain.NotFound("%s not found", what)
	case errors.Is(err, gorm.ErrForeignKeyViolated) && validator != "":
		return domain.NotFound("validator %q not found", validator)
	case outage(err):
		e := domain.Unavailable("database is unavailable; retry later")
		e.Cause = fmt.Errorf("%s: %w", what, err)
		return e
	default:
		return &namedError{what: what, err: err}
	}
}

// namedError is an unexpected database error named by the row it concerned;
// translated again (a transaction's error after its statement's), it stays.
type namedError struct {
	what string
	err  error
}

func (e *namedError) Error() string { return e.what + ": " + e.err.Error() }
func (e *namedError) Unwrap() error { return e.err }

// outage tells a database that cannot be reached or cannot serve (a dropped
// or refused connection, a closed pool, a file SQLite cannot open or write)
// from a statement the database refused.
func outage(err error) bool {
	var (
		netErr  net.Error
		connErr *pgconn.ConnectError
		pgErr   *pgconn.PgError
		liteErr sqlite3.Error
	)
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone), errors.As(err, &connErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF): // the connection was dropped mid-statement
		return true
	case errors.As(err, &pgErr):
		// Class 08: connection exception; 57P01..57P03: the server is shutting
		// down or not yet accepting connections; 53300: too many connections.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P0") || pgErr.Code == "53300"
	case errors.As(err, &liteErr):
		switch liteErr.Code {
		case sqlite3.ErrCantOpen, sqlite3.ErrIoErr, sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrFull, sqlite3.ErrReadonly, sqlite3.ErrNotADB, sqlite3.ErrCorrupt:
			return true
		}
		return false
	default:
		// database/sql does not export the error of a closed pool.
		return strings.Contains(err.Error(), "sql: database is closed")
	}
}

// affected reports a change that matched no row as the row not found.
func affected(res *gorm.DB, what string) error {
	if res.Error != nil {
		return translate(res.Error, what, "")
	}
	if res.RowsAffected == 0 {
		return translate(gorm.ErrRecordNotFound, what, "")
	}
	return nil
}

func validatorWhat(name string) string { return fmt.Sprintf("validator %q", name) }

func participantWhat(name string) string { return fmt.Sprintf("remote participant %q", name) }

func pruneWhat(validator string) string {
	return fmt.Sprintf("prune schedule of validator %q", validator)
}

func backupWhat(validator string) string {
	return fmt.Sprintf("backup schedule of validator %q", validator)
}
