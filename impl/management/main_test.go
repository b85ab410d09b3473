package management_test

import (
	"testing"

	"github.com/validator-manager/validator-manager/impl/apitest"
)

// The servers of these tests share one control plane, stopped at the end.
func TestMain(m *testing.M) { apitest.Main(m) }
