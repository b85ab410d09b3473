package domain

import "strconv"

// Services of a validator, by the Helm charts' naming convention: each
// answers at <validator>-<service>.<namespace>.svc.cluster.local. Release
// 1.11 shows these addresses, the recover command and release 2.0's
// upstream resolver dial them.
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
	return validator + "-" + service + "." + namespace + ".svc.cluster.local"
}

// ValidatorAppURL is the base URL of a validator's validator app.
func ValidatorAppURL(validator, namespace string) string {
	return "http://" + ServiceHost(validator, ServiceValidatorApp, namespace) + ":" + strconv.Itoa(ValidatorAppPort)
}

// JSONAPIURL is the base URL of a validator's JSON Ledger API.
func JSONAPIURL(validator, namespace string) string {
	return "http://" + ServiceHost(validator, ServiceParticipant, namespace) + ":" + strconv.Itoa(JSONAPIPort)
}
