package management

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/faultpoint"
)

// Page defaults (the document leaves them open; see docs/decisions.md).
const (
	defaultLimit = 20
)

func page(from, limit *int32) domain.Page {
	p := domain.Page{Limit: defaultLimit}
	if from != nil {
		p.Offset = int(*from)
	}
	if limit != nil {
		p.Limit = int(*limit)
	}
	return p
}

func (s *Server) ListValidators(ctx context.Context, req managementapi.ListValidatorsRequestObject) (managementapi.ListValidatorsResponseObject, error) {
	f := domain.ValidatorFilter{Page: page(req.Params.From, req.Params.Limit)}
	if req.Params.Name != nil {
		f.NameContains = *req.Params.Name
	}
	if req.Params.Status != nil {
		f.Phase = domain.Phase(*req.Params.Status)
	}
	rows, total, err := s.store.ListValidators(ctx, f)
	if err != nil {
		return nil, err
	}
	return s.renderPage(ctx, rows, total)
}

// CreateValidator records the validator first, marked Creating (so that of
// two concurrent creates exactly one wins, and so that a crash leaves a
// record the reconciler undoes), then creates the wallet user, the cluster
// objects and the Secrets, and clears the mark last. A failure undoes the
// steps done; an undo that fails is finished by the reconciler.
func (s *Server) CreateValidator(ctx context.Context, req managementapi.CreateValidatorRequestObject) (managementapi.CreateValidatorResponseObject, error) {
	dto := *req.Body
	if err := checkCreate(dto); err != nil {
		return nil, err
	}
	prune, err := pruneFromCreate(dto)
	if err != nil {
		return nil, err
	}
	cfg := configFromCreate(dto)
	if err := s.cluster.CheckReferences(ctx, references(cfg)); err != nil {
		return nil, err
	}

	secrets := splitSecrets(dto)
	cfg.MarkWritten(secrets.Written())
	customAuth := dto.CustomAuth != nil && *dto.CustomAuth
	v := domain.Validator{
		Name:             dto.Name,
		Phase:            domain.PhasePending,
		CustomAuth:       customAuth,
		ExternalDatabase: dto.DatabaseConfig != nil && dto.DatabaseConfig.External != nil && *dto.DatabaseConfig.External,
		MigrationID:      dto.ClusterConfig.Migration.Id,
		Migrating:        dto.ClusterConfig.Migration.Migrating != nil && *dto.ClusterConfig.Migration.Migrating,
		Creating:         true,
		Claim:            uuid.NewString(),
	}
	if !v.ExternalDatabase {
		v.DatabaseStorage = defaultDatabaseStorage
	}
	if err := setConfig(&v, cfg); err != nil {
		return nil, err
	}

	defer s.locks.lock(v.Name)()
	if err := s.claim(ctx, &v); err != nil {
		if errors.Is(err, domain.ErrConflict) {
			return s.createConflict(ctx, dto.Name, err)
		}
		return nil, err
	}
	faultpoint.Reach("create.recorded")
	// After the name is claimed, a failing step is the server's problem, not
	// the caller's: 500, the cause in the log.
	fail := func(err error) (managementapi.CreateValidatorResponseObject, error) {
		s.undoCreate(ctx, v, err)
		return nil, domain.Internal(fmt.Errorf("create validator %q: %w", v.Name, err))
	}

	var created *domain.CreatedUser
	if !customAuth {
		user, err := s.identity.CreateWalletUser(ctx, v.Name, v.Claim)
		if errors.Is(err, domain.ErrConflict) {
			// A user left from elsewhere: the caller can pick another name.
			s.undoCreate(ctx, v, err)
			return nil, domain.Invalid("name", "the identity provider already has a user %s_walletuser; remove it or choose another name", v.Name)
		}
		if err != nil {
			return fail(fmt.Errorf("create wallet user: %w", err))
		}
		faultpoint.Reach("create.walletUser")
		created = &user
		v.WalletUserID = user.ID
		if err := s.store.UpdateValidator(ctx, &v); err != nil {
			return fail(err)
		}
	}
	if prune != nil {
		if err := s.store.CreatePruneSchedule(ctx, prune); err != nil {
			return fail(err)
		}
	}
	if err := s.cluster.ApplyValidator(ctx, v, prune); err != nil {
		return fail(err)
	}
	faultpoint.Reach("create.applied")
	if err := s.cluster.WriteSecrets(ctx, v.Name, secrets); err != nil {
		return fail(err)
	}
	faultpoint.Reach("create.secrets")
	if err := s.store.FinishCreate(ctx, v.Name); err != nil {
		return fail(err)
	}
	v.Creating = false
	faultpoint.Reach("create.finished")

	r, err := s.response(v)
	if err != nil {
		return nil, err
	}
	if created != nil {
		r.CreatedUser = &managementapi.CreatedUserDto{
			Id:                ptr(created.ID),
			Username:          ptr(created.Username),
			TemporaryPassword: ptr(created.TemporaryPassword),
		}
	}
	s.log.InfoContext(ctx, "validator created", "validator", v.Name, "customAuth", customAuth)
	return managementapi.CreateValidator201JSONResponse(r), nil
}

// claim inserts the Creating record. A record of the same name left Creating
// by a create that died is undone first, so the name is free again.
func (s *Server) claim(ctx context.Context, v *domain.Validator) error {
	err := s.store.CreateValidator(ctx, v)
	if !errors.Is(err, domain.ErrConflict) {
		return err
	}
	existing, gerr := s.store.GetValidator(ctx, v.Name)
	if gerr != nil || !existing.Creating {
		return err
	}
	if uerr := s.rec.undoCreate(ctx, existing); uerr != nil {
		s.rec.retry(v.Name, uerr)
		return domain.Conflict("an interrupted create of validator %q is still being undone; try again shortly", v.Name)
	}
	return s.store.CreateValidator(ctx, v)
}

// undoCreate removes what a failed create made; what it cannot remove now,
// the reconciler removes later (the record stays Creating until then).
func (s *Server) undoCreate(ctx context.Context, v domain.Validator, cause error) {
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.rec.undoCreate(bg, v); err != nil {
		s.log.ErrorContext(ctx, "undoing a failed create failed; the reconciler will finish it", "validator", v.Name, "error", err, "cause", cause)
		s.rec.retry(v.Name, err)
	}
}

// createConflict answers 409 with the existing validator, as the document
// asks (never with its created user: that was shown once).
func (s *Server) createConflict(ctx context.Context, name string, cause error) (managementapi.CreateValidatorResponseObject, error) {
	existing, err := s.store.GetValidator(ctx, name)
	if err != nil || existing.Creating {
		// Deleted in between, or still being undone: a conflict without a body.
		return nil, cause
	}
	r, err := s.response(existing)
	if err != nil {
		return nil, err
	}
	return managementapi.CreateValidator409JSONResponse(r), nil
}

// checkCreate enforces what the contract cannot express.
func checkCreate(dto managementapi.ValidatorDto) error {
	var bad domain.Invalids
	if dto.Auth != nil && (dto.Auth.LedgerApiClientSecret == nil || *dto.Auth.LedgerApiClientSecret == "") {
		bad = append(bad, domain.Invalid("auth.ledgerApiClientSecret", "is required"))
	}
	if db := dto.DatabaseConfig; db != nil && db.External != nil && *db.External {
		bad = append(bad, externalDatabaseAddress(*db)...)
	}
	if len(bad) > 0 {
		return bad
	}
	return nil
}

// externalDatabaseAddress requires where an external database is.
func externalDatabaseAddress(db managementapi.ValidatorDbConfigDto) domain.Invalids {
	var bad domain.Invalids
	if db.Hostname == nil || *db.Hostname == "" {
		bad = append(bad, domain.Invalid("databaseConfig.hostname", "is required for an external database"))
	}
	if db.Port == nil || *db.Port == "" {
		bad = append(bad, domain.Invalid("databaseConfig.port", "is required for an external database"))
	}
	return bad
}

// UpdateValidator applies a partial edit. Null sections are unchanged;
// immutable fields are refused with 400, a frozen validator with 409. The
// Secrets given are written first (their values are nowhere else), then the
// record, then the cluster is driven to it.
func (s *Server) UpdateValidator(ctx context.Context, req managementapi.UpdateValidatorRequestObject) (managementapi.UpdateValidatorResponseObject, error) {
	edit := *req.Body
	defer s.locks.lock(edit.Name)()
	old, err := s.validator(ctx, edit.Name)
	if err != nil {
		return nil, err
	}
	if old.Immutable {
		return nil, domain.Conflict("validator %q is not editable (disableUserEdit)", old.Name)
	}
	cfg, err := old.Config()
	if err != nil {
		return nil, err
	}
	next := old
	secrets, err := applyEdit(&next, &cfg, edit)
	if err != nil {
		return nil, err
	}
	if err := s.cluster.CheckReferences(ctx, references(cfg)); err != nil {
		return nil, err
	}
	cfg.MarkWritten(secrets.Written())
	if err := setConfig(&next, cfg); err != nil {
		return nil, err
	}
	if err := s.cluster.WriteSecrets(ctx, next.Name, secrets); err != nil {
		return nil, domain.Internal(fmt.Errorf("edit validator %q: %w", next.Name, err))
	}
	faultpoint.Reach("edit.secrets")
	err = s.change(ctx, next.Name, "edit",
		func(ctx context.Context) error { return s.store.UpdateValidator(ctx, &next) },
		func(ctx context.Context) error { return s.store.UpdateValidator(ctx, &old) })
	if err != nil {
		return nil, domain.Internal(fmt.Errorf("edit validator %q: %w", next.Name, err))
	}
	s.log.InfoContext(ctx, "validator edited", "validator", next.Name)
	return managementapi.UpdateValidator200Response{}, nil
}

// validator reads a validator the API shows: one whose create is still
// running (or was interrupted) is not found.
func (s *Server) validator(ctx context.Context, name string) (domain.Validator, error) {
	v, err := s.store.GetValidator(ctx, name)
	if err == nil && v.Creating {
		return domain.Validator{}, domain.NotFound("validator %q not found", name)
	}
	return v, err
}

// checkGrow refuses a smaller volume: Kubernetes cannot shrink a PVC.
func checkGrow(current, next string) error {
	want, err := resource.ParseQuantity(next)
	if err != nil {
		return fmt.Errorf("%q is not a quantity", next)
	}
	if current == "" {
		current = defaultDatabaseStorage
	}
	have, err := resource.ParseQuantity(current)
	if err != nil {
		return nil
	}
	if want.Cmp(have) < 0 {
		return fmt.Errorf("must not shrink (from %s to %s)", current, next)
	}
	return nil
}
