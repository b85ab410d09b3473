package recovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/validator-manager/validator-manager/gen/managementapi"
)

// pageSize is the largest page GET /api/validators serves.
const pageSize managementapi.Limit = 500

// findValidator reads the validator through GET /api/validators. The name
// filter matches substrings: the exact name is picked from the pages.
func (p *Procedure) findValidator(ctx context.Context) (managementapi.ValidatorResponseDto, error) {
	limit := pageSize
	var from managementapi.From
	for {
		resp, err := p.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{Name: &p.Validator, From: &from, Limit: &limit})
		if err != nil {
			return managementapi.ValidatorResponseDto{}, fmt.Errorf("validator-manager: list validators: %w", err)
		}
		if resp.JSON200 == nil {
			return managementapi.ValidatorResponseDto{}, apiError("list validators", resp.HTTPResponse, resp.Body)
		}
		for _, v := range resp.JSON200.Validators {
			if v.Name != nil && *v.Name == p.Validator {
				return v, nil
			}
		}
		from += managementapi.From(len(resp.JSON200.Validators))
		if len(resp.JSON200.Validators) == 0 || int64(from) >= resp.JSON200.TotalCount {
			return managementapi.ValidatorResponseDto{}, fmt.Errorf("validator-manager has no validator %q", p.Validator)
		}
	}
}

// currentMigration is the validator's migration id.
func (p *Procedure) currentMigration(ctx context.Context) (int32, error) {
	v, err := p.findValidator(ctx)
	if err != nil {
		return 0, err
	}
	id, _, err := migrationOf(v)
	return id, err
}

func migrationOf(v managementapi.ValidatorResponseDto) (int32, bool, error) {
	if v.MigrationId == nil {
		return 0, false, fmt.Errorf("validator-manager reports no migration id for %q", *v.Name)
	}
	id, err := strconv.ParseInt(*v.MigrationId, 10, 32)
	if err != nil || id < 0 {
		return 0, false, fmt.Errorf("validator-manager reports migration id %q for %q: not a migration id", *v.MigrationId, *v.Name)
	}
	return int32(id), v.MigrationMigrating != nil && *v.MigrationMigrating, nil
}

// migrate is step 6: PUT /api/validators with clusterConfig.migration
// {id, migrating: true}, then the list is polled until it shows both.
func (p *Procedure) migrate(ctx context.Context, id int32) error {
	// Read again: another operator may have moved the id since the check.
	current, err := p.currentMigration(ctx)
	if err != nil {
		return err
	}
	if id <= current {
		return fmt.Errorf("the new migration id %d is no longer greater than the current %d", id, current)
	}
	migrating := true
	resp, err := p.Management.UpdateValidatorWithResponse(ctx, managementapi.ValidatorEditDto{
		Name:          p.Validator,
		ClusterConfig: &managementapi.ClusterConfigEditDto{Migration: managementapi.MigrationDto{Id: id, Migrating: &migrating}},
	})
	if err != nil {
		return fmt.Errorf("validator-manager: edit validator: %w", err)
	}
	if resp.StatusCode() != http.StatusOK {
		return apiError("edit validator", resp.HTTPResponse, resp.Body)
	}
	return p.await(ctx, id)
}

// await polls until the validator reports migration id, migrating.
func (p *Procedure) await(ctx context.Context, id int32) error {
	interval, timeout := p.PollInterval, p.Timeout
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	last := "nothing"
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		v, err := p.findValidator(ctx)
		if err != nil {
			last = "an error (" + err.Error() + ")"
			return false, nil
		}
		got, migrating, err := migrationOf(v)
		last = fmt.Sprintf("migration %d, migrating %t", got, migrating)
		return got == id && migrating, err
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("the edit was accepted but within %s validator-manager showed %s, not migration %d, migrating: %w", timeout, last, id, err)
	}
	return err
}

// apiError describes a refusal of validator-manager: status and the start of
// its JSON error body (which never carries secrets).
func apiError(op string, resp *http.Response, body []byte) error {
	status := "no response"
	if resp != nil {
		status = resp.Status
	}
	msg := fmt.Sprintf("validator-manager: %s: answered %s%s", op, status, excerpt(bytes.NewReader(body)))
	if resp != nil && resp.StatusCode == http.StatusUnauthorized {
		msg += " (the validator-manager token is missing or not accepted)"
	}
	return errors.New(msg)
}
