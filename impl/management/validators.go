package management

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
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
	out := managementapi.ListValidators200JSONResponse{Validators: make([]managementapi.ValidatorResponseDto, 0, len(rows)), TotalCount: total}
	for _, v := range rows {
		r, err := s.response(v)
		if err != nil {
			return nil, err
		}
		out.Validators = append(out.Validators, r)
	}
	return out, nil
}

// CreateValidator claims the name in the database first (so that of two
// concurrent creates exactly one wins), then creates the wallet user, then
// the cluster objects; a failure undoes the steps done, newest first.
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
	cfg.MarkWritten(secrets)
	customAuth := dto.CustomAuth != nil && *dto.CustomAuth
	v := domain.Validator{
		Name:             dto.Name,
		Phase:            domain.PhasePending,
		CustomAuth:       customAuth,
		ExternalDatabase: dto.DatabaseConfig != nil && dto.DatabaseConfig.External != nil && *dto.DatabaseConfig.External,
		MigrationID:      dto.ClusterConfig.Migration.Id,
		Migrating:        dto.ClusterConfig.Migration.Migrating != nil && *dto.ClusterConfig.Migration.Migrating,
	}
	if !v.ExternalDatabase {
		v.DatabaseStorage = defaultDatabaseStorage
	}
	if v.Spec, err = domain.EncodeValidatorConfig(cfg); err != nil {
		return nil, err
	}

	// An edit of the name must not interleave with the steps below.
	defer s.locks.lock(v.Name)()
	if err := s.store.CreateValidator(ctx, &v); err != nil {
		if errors.Is(err, domain.ErrConflict) {
			return s.createConflict(ctx, dto.Name, err)
		}
		return nil, err
	}
	u := &undo{log: s.log}
	u.push("delete validator row", func(ctx context.Context) error { return s.store.DeleteValidator(ctx, v.Name) })
	// After the name is claimed, a failing step is the server's problem, not
	// the caller's: 500, the cause in the log.
	fail := func(err error) (managementapi.CreateValidatorResponseObject, error) {
		u.run(err)
		return nil, domain.Internal(fmt.Errorf("create validator %q: %w", v.Name, err))
	}

	var created *domain.CreatedUser
	if !customAuth {
		user, err := s.identity.CreateWalletUser(ctx, v.Name)
		if errors.Is(err, domain.ErrConflict) {
			// A user left from elsewhere: the caller can pick another name.
			u.run(err)
			return nil, domain.Invalid("name", "the identity provider already has a user %s_walletuser; remove it or choose another name", v.Name)
		}
		if err != nil {
			return fail(fmt.Errorf("create wallet user: %w", err))
		}
		created = &user
		u.push("delete wallet user", func(ctx context.Context) error { return s.identity.DeleteUser(ctx, user.ID) })
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

	// Any partial write to the cluster is removed on failure.
	u.push("delete cluster objects", func(ctx context.Context) error { return s.cluster.DeleteValidator(ctx, v.Name) })
	if err := s.cluster.ApplyValidator(ctx, v, secrets); err != nil {
		return fail(err)
	}
	if prune != nil {
		if err := s.cluster.ApplyPruneSchedule(ctx, v.Name, prune); err != nil {
			return fail(err)
		}
	}

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

// createConflict answers 409 with the existing validator, as the document
// asks (never with its created user: that was shown once).
func (s *Server) createConflict(ctx context.Context, name string, cause error) (managementapi.CreateValidatorResponseObject, error) {
	existing, err := s.store.GetValidator(ctx, name)
	if err != nil {
		// Deleted in between (a failed concurrent create undone): still a conflict.
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
// immutable fields are refused with 400, a frozen validator with 409.
func (s *Server) UpdateValidator(ctx context.Context, req managementapi.UpdateValidatorRequestObject) (managementapi.UpdateValidatorResponseObject, error) {
	edit := *req.Body
	defer s.locks.lock(edit.Name)()
	old, err := s.store.GetValidator(ctx, edit.Name)
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
	cfg.MarkWritten(secrets)
	if next.Spec, err = domain.EncodeValidatorConfig(cfg); err != nil {
		return nil, err
	}
	if err := s.store.UpdateValidator(ctx, &next); err != nil {
		return nil, err
	}
	if err := s.cluster.ApplyValidator(ctx, next, secrets); err != nil {
		// The resource may be written and only a Secret have failed: put
		// both back (Secrets already written keep their new values).
		u := &undo{log: s.log}
		u.push("restore validator row", func(ctx context.Context) error { return s.store.UpdateValidator(ctx, &old) })
		u.push("restore Validator resource", func(ctx context.Context) error {
			return s.cluster.ApplyValidator(ctx, old, domain.ValidatorSecrets{})
		})
		u.run(err)
		return nil, domain.Internal(fmt.Errorf("edit validator %q: %w", next.Name, err))
	}
	s.log.InfoContext(ctx, "validator edited", "validator", next.Name)
	return managementapi.UpdateValidator200Response{}, nil
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
