package domain

import (
	"time"

	"k8s.io/utils/ptr"
)

// Page is an offset page: Offset rows skipped, at most Limit returned.
type Page struct {
	Offset int
	Limit  int
}

// ValidatorFilter selects validators; zero values select everything.
type ValidatorFilter struct {
	// NameContains is a literal, case-sensitive substring (% and _ match themselves).
	NameContains string
	Phase        Phase
	Page
}

// RemoteParticipantFilter selects remote participants.
type RemoteParticipantFilter struct {
	NameContains string
	Phase        Phase
	// Healthy selects by last known health check; participants never checked
	// match neither true nor false.
	Healthy *bool
	Page
}

// RunFilter selects the runs of one validator, of one kind (every kind when
// Kind is empty).
type RunFilter struct {
	Validator string
	Kind      RunKind
	Page
}

// AuditFilter selects audit entries; zero values select everything. Before
// is a cursor: only entries whose ID is lower.
type AuditFilter struct {
	Validator string
	Subject   string
	Since     time.Time // at or after
	Until     time.Time // before
	Before    int64
	Page
}

// NewAuditFilter reads listAuditEntries' optional query parameters, which both
// releases share; absent ones select everything.
func NewAuditFilter(validator, subject *string, since, until *time.Time, page Page) AuditFilter {
	return AuditFilter{Validator: ptr.Deref(validator, ""), Subject: ptr.Deref(subject, ""), Since: ptr.Deref(since, time.Time{}), Until: ptr.Deref(until, time.Time{}), Page: page}
}
