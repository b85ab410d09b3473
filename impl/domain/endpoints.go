package domain

import "strconv"

// Services of a validator, by the Helm charts' naming convention:
// <validator>-<service>.<namespace>.svc.cluster.local, or in chart mode
// <service>.<release namespace>.svc.cluster.local (an empty validator below).
const (
	ServiceParticipant  = "participant"   // ledger API :5001, admin API :5002, JSON API :7575
	ServiceValidatorApp = "validator-app" // validator app :5003
	ServiceWalletUI     = "wallet-web-ui"
	ServiceANSUI        = "ans-web-ui"
)

// Ports of the participant and the validator app.
const (
	LedgerAPIPort    = 5001
	AdminAPIPort     = 5002
	ValidatorAppPort = 5003
	JSONAPIPort      = 7575
)

// ServiceHost is the cluster DNS name of one of a validator's services.
func ServiceHost(validator, service, namespace string) string {
	return string(AppendServiceHost(nil, validator, service, namespace))
}

// LedgerAPIAddress is host:port of a validator's gRPC Ledger API.
func LedgerAPIAddress(validator, namespace string) string {
	return string(AppendLedgerAPIAddress(nil, validator, namespace))
}

// AdminAPIAddress is host:port of a validator's participant admin gRPC API.
func AdminAPIAddress(validator, namespace string) string {
	return string(appendAddress(nil, validator, ServiceParticipant, namespace, AdminAPIPort))
}

// ValidatorAppURL is the base URL of a validator's validator app.
func ValidatorAppURL(validator, namespace string) string {
	return string(AppendValidatorAppURL(nil, validator, namespace))
}

// JSONAPIURL is the base URL of a validator's JSON Ledger API.
func JSONAPIURL(validator, namespace string) string {
	return string(AppendJSONAPIURL(nil, validator, namespace))
}

// The Append forms append the same to b: for writers that build many
// addresses (a list page) without a string each.

func AppendServiceHost(b []byte, validator, service, namespace string) []byte {
	if validator != "" {
		b = append(b, validator...)
		b = append(b, '-')
	}
	b = append(b, service...)
	b = append(b, '.')
	b = append(b, namespace...)
	return append(b, ".svc.cluster.local"...)
}

func AppendLedgerAPIAddress(b []byte, validator, namespace string) []byte {
	return appendAddress(b, validator, ServiceParticipant, namespace, LedgerAPIPort)
}

func AppendValidatorAppURL(b []byte, validator, namespace string) []byte {
	return appendAddress(append(b, "http://"...), validator, ServiceValidatorApp, namespace, ValidatorAppPort)
}

func AppendJSONAPIURL(b []byte, validator, namespace string) []byte {
	return appendAddress(append(b, "http://"...), validator, ServiceParticipant, namespace, JSONAPIPort)
}

// appendAddress appends host:port of a validator's service.
func appendAddress(b []byte, validator, service, namespace string, port int) []byte {
	b = append(AppendServiceHost(b, validator, service, namespace), ':')
	return strconv.AppendInt(b, int64(port), 10)
}
