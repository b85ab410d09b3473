package management

import (
	"context"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

func (s *Server) ListValidatorRuns(ctx context.Context, req managementapi.ListValidatorRunsRequestObject) (managementapi.ListValidatorRunsResponseObject, error) {
	if _, err := s.Store.GetValidator(ctx, req.Name); err != nil {
		return nil, err
	}
	f := domain.RunFilter{Validator: req.Name, Page: page(req.Params.From, req.Params.Limit)}
	if req.Params.Kind != nil {
		f.Kind = domain.RunKind(strings.ToLower(string(*req.Params.Kind)))
	}
	rows, total, err := s.Store.ListRuns(ctx, f)
	if err != nil {
		return nil, err
	}
	// No runs is [], never null.
	return managementapi.ListValidatorRuns200JSONResponse{Runs: append([]managementapi.RunDto{}, mapSlice(rows, runResponse)...), TotalCount: total}, nil
}

// runResponse is the wire form of a run: kinds in the contract's upper case,
// the outcome from whether and how it finished.
func runResponse(r domain.Run) managementapi.RunDto {
	dto := managementapi.RunDto{
		Id:        r.ID,
		Kind:      managementapi.RunKind(strings.ToUpper(string(r.Kind))),
		StartedAt: r.StartedAt.UTC(),
		Outcome:   managementapi.RunRunning,
		Message:   domain.NonZero(r.Message),
	}
	if r.FinishedAt != nil {
		dto.FinishedAt = ptr.To(r.FinishedAt.UTC())
		dto.Outcome = managementapi.RunFailed
		if r.Succeeded != nil && *r.Succeeded {
			dto.Outcome = managementapi.RunSucceeded
		}
	}
	return dto
}
