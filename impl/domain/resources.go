package domain

import "time"

// ResourceKind names a custom resource kind release 2.0 reads.
type ResourceKind string

const (
	KindValidator   ResourceKind = "Validator"
	KindApplication ResourceKind = "Application"
)

// ApplicationMetrics is the resource use of one application, summed over the
// containers of its pods. A nil value is unknown: a request or limit that not
// every container sets, a usage the metrics API did not report.
type ApplicationMetrics struct {
	Name      string
	Namespace string
	// Available is false when the cluster metrics API could not be reached.
	Available     bool
	CPUUsage      *int64 // millicores
	CPURequest    *int64
	CPULimit      *int64
	MemoryUsage   *int64 // bytes
	MemoryRequest *int64
	MemoryLimit   *int64
}

// AuditEntry is one mutating call as the audit log keeps it: who, what,
// outcome. It never holds a request body, a secret or key material.
type AuditEntry struct {
	ID      int64 // set by the store; higher is later
	At      time.Time
	Subject string // the token's subject
	// Role is the role the caller's token carried (setting api.auth.roles);
	// empty when roles are off.
	Role      string
	Operation string // operationId
	Validator string // the path parameter name, when the operation has one
	// Targets are the other path parameters (userId, username), by name.
	Targets map[string]string
	// Status is the answer's status; 0 while Outcome is AuditPending or
	// AuditUnknown.
	Status    int
	RequestID string
	// Outcome says whether the call finished: AuditDone, AuditPending
	// (written before the operation was attempted) or AuditUnknown (the
	// server stopped between the two writes). Empty reads as AuditDone.
	Outcome string
}

// Audit outcomes.
const (
	AuditPending = "pending"
	AuditDone    = "done"
	AuditUnknown = "unknown"
)
