package apitest

import (
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/managementapi"
)

// The secret values ValidatorPayload carries: tests look for them where
// they must be (the validator's Secrets) and where they must never be
// (rows, resources, responses, logs).
const (
	OnboardingSecret = "onboarding-Secret-Value-1"
	ClientSecret     = "client-Secret-Value-2"
	DatabasePassword = "database-Password-Value-3"
)

// ValidatorPayload is a complete, valid release 1.11 create payload that
// carries every secret. Its upstream addresses are .test names, which never
// resolve (on the embedded default the sandbox answers for every upstream).
func ValidatorPayload(name string) managementapi.ValidatorDto {
	none := []managementapi.EnvVar{}
	return managementapi.ValidatorDto{
		Name:      name,
		ImageRepo: "registry.example.com/splice",
		ImageTag:  "0.4.2",
		ClusterConfig: managementapi.ClusterConfigDto{
			AppInfoLedgerNameService: managementapi.AppInfoDto{EnvVars: none},
			AppInfoValidator: managementapi.AppInfoDto{
				EnvVars: []managementapi.EnvVar{{Name: ptr.To("LOG_LEVEL"), Value: ptr.To("INFO")}, {Name: ptr.To("JAVA_OPTS"), Value: ptr.To("-Xmx2g")}},
			},
			DefaultJvmOptions: "-Xms1g",
			Migration:         managementapi.MigrationDto{Id: 1},
			PartyHint:         "acme-validator",
			ScanAddress:       "https://scan.example.test",
			SvSponsorAddress:  "https://sv.example.test",
		},
		Participant: managementapi.AppInfoDto{EnvVars: none},
		Auth: &managementapi.ValidatorAuthDto{
			Audience: "https://ledger.example.test", CnsClientId: "cns", WalletClientId: "wallet",
			LedgerApiClientId: "validator", LedgerApiClientSecret: ptr.To(ClientSecret),
			LedgerApiUser: "validator-user", WalletUser: "wallet-user",
		},
		OnboardingSecret: ptr.To(OnboardingSecret),
		DatabaseConfig:   &managementapi.ValidatorDbConfigDto{Username: ptr.To("cnadmin"), Password: ptr.To(DatabasePassword)},
	}
}

// DropEmptyLists removes the null and empty lists of m, at any depth: an
// apply configuration sends none, while the stored form of a configuration
// writes, for example, an application's envVars as null when it has none.
func DropEmptyLists(m map[string]any) {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case []any:
			if len(t) == 0 {
				delete(m, k)
			}
		case map[string]any:
			DropEmptyLists(t)
		}
	}
}
