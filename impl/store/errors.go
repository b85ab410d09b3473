package store

import (
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// translate turns a database error into the domain error callers act on; it
// is the one place where GORM's errors are interpreted. what names the row
// (`validator "x"`), validator the row its foreign key points to, if any.
func translate(err error, what, validator string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return domain.Conflict("%s already exists", what)
	case errors.Is(err, gorm.ErrRecordNotFound):
		return domain.NotFound("%s not found", what)
	case errors.Is(err, gorm.ErrForeignKeyViolated) && validator != "":
		return domain.NotFound("validator %q not found", validator)
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

// affected reports a change that matched no row as the row not found.
func affected(res *gorm.DB, what, validator string) error {
	if res.Error != nil {
		return translate(res.Error, what, validator)
	}
	if res.RowsAffected == 0 {
		return translate(gorm.ErrRecordNotFound, what, validator)
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
