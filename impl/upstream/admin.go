package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	participantv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/admin/participant/v30"
	cryptoadminv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/crypto/admin/v30"
	topologyadminv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/topology/admin/v30"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/outbound"
	"github.com/validator-manager/validator-manager/impl/telemetry"
)

// Admin is the name of the participant admin gRPC API in errors and latency observations.
const Admin = "participant-admin"

// AdminAPI is a validator's participant admin API: the generated clients
// of the services validator-manager calls, over one authenticated connection.
type AdminAPI struct {
	// Address is host:port of the admin API.
	Address       string
	TopologyRead  topologyadminv30.TopologyManagerReadServiceClient
	TopologyWrite topologyadminv30.TopologyManagerWriteServiceClient
	Vault         cryptoadminv30.VaultServiceClient
	Status        participantv30.ParticipantStatusServiceClient
	Packages      participantv30.PackageServiceClient
	conn          *grpc.ClientConn
}

// adminKey identifies a cached connection: one per address, transport and grant.
type adminKey struct {
	address string
	tls     *tls.Config
	grant   string
}

// admin returns the cached admin API connection of t; grpc.NewClient dials
// at the first call. Under an outbound policy, the address (plaintext as
// http://: the token then travels in clear) and the token endpoint are
// checked first, and every dial goes through the policy's dialer.
func (c *Clients) admin(t Target) (*AdminAPI, error) {
	if t.AdminAddress == "" {
		return nil, domain.Unavailable("the participant admin API address of validator %q is unknown", t.Validator)
	}
	if policy := c.policy; policy != nil {
		scheme := "http://"
		if t.AdminTLS != nil {
			scheme = "https://"
		}
		if err := policy.CheckURL(scheme + t.AdminAddress); err != nil {
			return nil, notCalled(t.AdminAddress, err)
		}
		if t.Credentials != nil {
			if err := policy.CheckURL(t.Credentials.TokenURL); err != nil {
				return nil, notCalled(t.AdminAddress, err)
			}
		}
	}
	k := adminKey{address: t.AdminAddress, tls: t.AdminTLS}
	if t.Credentials != nil {
		k.grant = t.Credentials.key()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.admins[k]; ok {
		return a, nil
	}
	transport := insecure.NewCredentials()
	if t.AdminTLS != nil {
		transport = credentials.NewTLS(t.AdminTLS)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(transport)}
	var dialer *policyDialer
	if c.policy != nil {
		dialer = &policyDialer{policy: c.policy, timeout: c.opts.Timeout}
		opts = append(opts, grpc.WithContextDialer(dialer.dial))
	}
	opts = append(opts, grpc.WithChainUnaryInterceptor(c.adminInterceptor(t.AdminAddress, dialer)))
	if t.Credentials != nil {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{source: c.tokenSourceLocked(*t.Credentials), tls: t.AdminTLS != nil}))
	}
	conn, err := grpc.NewClient("passthrough:///"+t.AdminAddress, opts...)
	if err != nil {
		return nil, fmt.Errorf("participant admin API client: %w", err)
	}
	a := &AdminAPI{
		Address:       t.AdminAddress,
		TopologyRead:  topologyadminv30.NewTopologyManagerReadServiceClient(conn),
		TopologyWrite: topologyadminv30.NewTopologyManagerWriteServiceClient(conn),
		Vault:         cryptoadminv30.NewVaultServiceClient(conn),
		Status:        participantv30.NewParticipantStatusServiceClient(conn),
		Packages:      participantv30.NewPackageServiceClient(conn),
		conn:          conn,
	}
	c.admins[k] = a
	return a, nil
}

// notCalled is the 502 of an admin API the outbound address policy keeps
// the server from calling.
func notCalled(address string, err error) error {
	return &domain.UpstreamError{Endpoint: "grpc://" + address, Message: "not called: " + err.Error(), Cause: err}
}

// policyDialer dials through the outbound address policy and keeps its
// last refusal: gRPC reports a failed dial as Unavailable with the error
// flattened to text, and the interceptor answers with the refusal instead.
type policyDialer struct {
	policy  *outbound.Policy
	timeout time.Duration
	refused atomic.Pointer[outbound.RefusedError]
}

func (d *policyDialer) dial(ctx context.Context, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	conn, err := d.policy.DialContext(ctx, d.timeout, host, port)
	var re *outbound.RefusedError
	switch {
	case errors.As(err, &re):
		d.refused.Store(re)
	case err == nil:
		d.refused.Store(nil)
	}
	return conn, err
}

// refusal is the policy's refusal of the last dial, nil when it was not refused.
func (d *policyDialer) refusal() *outbound.RefusedError {
	if d == nil {
		return nil
	}
	return d.refused.Load()
}

// Close closes the cached admin API connections.
func (c *Clients) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for k, a := range c.admins {
		errs = append(errs, a.conn.Close())
		delete(c.admins, k)
	}
	return errors.Join(errs...)
}

// bearer sends the grant's access token with each call, over plaintext too
// (inside a cluster), as the JSON Ledger API client does over plain HTTP.
type bearer struct {
	source oauth2.TokenSource
	tls    bool
}

func (b bearer) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	tok, err := b.source.Token()
	if err != nil {
		return nil, err
	}
	return map[string]string{"authorization": "Bearer " + tok.AccessToken}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.tls }

// adminInterceptor bounds each call by the upstream timeout, reports its
// latency and translates its failure (a refused dial: the policy's refusal).
func (c *Clients) adminInterceptor(address string, dialer *policyDialer) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		call := AdminCall{Address: address, Method: method}
		var out error
		switch re := dialer.refusal(); {
		case err == nil:
		case re != nil && status.Code(err) == codes.Unavailable:
			out = &domain.UpstreamError{Endpoint: call.Endpoint(), Message: "not called: " + re.Error(), Cause: re}
		default:
			out = call.Failed(err)
		}
		if c.opts.Observe != nil {
			c.opts.Observe(Admin, adminOutcome(err), time.Since(start))
		}
		return out
	}
}

func adminOutcome(err error) string {
	switch status.Code(err) {
	case codes.OK:
		return telemetry.OutcomeOK
	case codes.DeadlineExceeded:
		return telemetry.OutcomeTimeout
	case codes.Unavailable, codes.Canceled:
		return telemetry.OutcomeError
	case codes.InvalidArgument, codes.FailedPrecondition, codes.NotFound, codes.AlreadyExists, codes.OutOfRange:
		return telemetry.OutcomeRejected
	}
	return telemetry.OutcomeFailed
}

// AdminCall describes one admin API call for error translation.
type AdminCall struct {
	Address string // host:port
	Method  string // the full method, /package.Service/Rpc
}

// Endpoint is the address shown to the client: grpc://host:port/package.Service/Rpc.
func (c AdminCall) Endpoint() string { return "grpc://" + c.Address + c.Method }

// cantonSerialMismatch is a Canton error code (the start of a status
// message) that gets an answer of its own.
const cantonSerialMismatch = "SERIAL_MISMATCH"

// cantonMessage is a status message in Canton's error form, CODE(category,
// correlation id): cause: the participant's own answer, not gRPC's report
// of a connection that failed.
var cantonMessage = regexp.MustCompile(`^[A-Z][A-Z0-9_]*\(\d+,[^)]*\): `)

// Failed translates a failed admin API call into a domain error; an
// unexpected status is named by its code only (the message goes to the log).
func (c AdminCall) Failed(err error) error {
	up := &domain.UpstreamError{Endpoint: c.Endpoint(), Cause: err}
	st, ok := status.FromError(err)
	if !ok {
		// No answer: the call's context ended, or the API was not reached.
		if st = status.FromContextError(err); st.Code() == codes.Unknown {
			st = status.New(codes.Unavailable, "")
		}
	}
	detail := truncate(st.Message(), 300)
	code, _, _ := strings.Cut(st.Message(), "(")
	switch st.Code() {
	case codes.InvalidArgument:
		up.Rejected, up.Message = true, detail
		return up
	case codes.FailedPrecondition:
		switch {
		case strings.Contains(strings.ToLower(st.Message()), "signature"):
			up.Rejected, up.Message = true, detail
			return up
		case code == cantonSerialMismatch:
			return &domain.Error{Code: domain.CodeConflict, Message: detail, Cause: up}
		}
		up.Message = "the participant admin API refused the request: " + detail
		return up
	case codes.NotFound:
		return &domain.Error{Code: domain.CodeNotFound, Message: detail, Cause: up}
	case codes.AlreadyExists:
		return &domain.Error{Code: domain.CodeConflict, Message: detail, Cause: up}
	case codes.DeadlineExceeded:
		up.Message = "the participant admin API did not answer in time"
	case codes.Unavailable:
		switch {
		case cantonMessage.MatchString(st.Message()):
			// The participant answered, saying why it cannot serve now.
			up.Message = "the participant admin API is unavailable: " + detail
		case strings.Contains(st.Message(), "oauth2"):
			up.Message = "no token could be obtained for the participant admin API"
		default:
			up.Message = "the participant admin API could not be reached"
		}
	case codes.Unauthenticated, codes.PermissionDenied:
		up.Message = "the participant admin API refused the server's credentials"
	case codes.Canceled:
		up.Message = "the request was cancelled while calling the participant admin API"
	default:
		up.Message = "the participant admin API failed (" + st.Code().String() + ")"
	}
	return up
}
