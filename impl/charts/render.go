package charts

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartv2util "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// ChartLabel names, on every object rendered, the chart it came from.
const ChartLabel = "validator-manager.io/chart"

// SchemaError is values a chart's values.schema.json refuses; the message
// names each value by its path ("at '/nodeIdentifier': got number, ...").
type SchemaError struct {
	Chart   string
	Version string
	// Value is the dotted path of the first value refused; empty for all.
	Value   string
	Message string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("values of chart %s %s do not match its values.schema.json: %s", e.Chart, e.Version, e.Message)
}

// Render renders ch as `helm template` does, as release name in namespace,
// into typed objects (unstructured for kinds not Kubernetes' own), each
// labelled ChartLabel. Hooks are left out: the controller applies a steady
// state and runs no release lifecycle. Values its schema refuses are a
// *SchemaError.
func Render(ctx context.Context, ch *chart.Chart, name, namespace string, values map[string]any) ([]client.Object, error) {
	vals, err := jsonValues(values)
	if err != nil {
		return nil, err
	}
	caps := common.DefaultCapabilities
	top, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, common.ReleaseOptions{
		Name: name, Namespace: namespace, Revision: 1, IsInstall: true,
	}, caps, true) // validated below, with a typed error
	if err != nil {
		return nil, fmt.Errorf("chart %s: values: %w", ch.Name(), err)
	}
	if err := chartutil.ValidateAgainstSchema(ch, top["Values"].(common.Values)); err != nil {
		msg := schemaMessage(ch.Name(), err)
		return nil, &SchemaError{Chart: ch.Name(), Version: ch.Metadata.Version, Value: firstValue(msg), Message: msg}
	}
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartv2util.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart %s %s requires kubeVersion %s", ch.Name(), ch.Metadata.Version, kv)
	}
	files, err := engine.Engine{}.RenderWithContext(ctx, ch, top)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s: render: %w", ch.Name(), ch.Metadata.Version, err)
	}
	maps.DeleteFunc(files, func(f, _ string) bool { return strings.HasSuffix(f, "NOTES.txt") })
	// Hooks are left out; the rest is in Helm's install order.
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
	}
	var objs []client.Object
	for _, m := range manifests {
		o, err := decode([]byte(m.Content))
		if err != nil {
			return nil, fmt.Errorf("chart %s %s: %s: %w", ch.Name(), ch.Metadata.Version, m.Name, err)
		}
		if o != nil {
			o.SetNamespace(namespace)
			o.SetLabels(labels.Merge(o.GetLabels(), labels.Set{ChartLabel: ch.Name()}))
			objs = append(objs, o)
		}
	}
	return objs, nil
}

// jsonValues is values as JSON gives them, as Helm's values files decode
// (Go types such as []string are not Helm values).
func jsonValues(values map[string]any) (map[string]any, error) {
	b, err := json.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("chart values: %w", err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("chart values: %w", err)
	}
	return out, nil
}

// schemaMessage is Helm's schema error on one line, sorted, without the
// chart's name. A secret's message is not shown: it may quote the value.
func schemaMessage(chartName string, err error) string {
	var entries []string
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
		if line == "" || line == chartName+":" {
			continue
		}
		if m := schemaPath.FindStringSubmatch(line); m != nil && secretPath.MatchString(m[1]) {
			line = "at '" + m[1] + "': refused (the value is not shown)"
		}
		entries = append(entries, line)
	}
	// Sorted: the same values give the same message (a condition that
	// does not change is not written again).
	slices.Sort(entries)
	return strings.Join(entries, "; ")
}

// secretPath matches the paths of values that hold secrets.
var secretPath = regexp.MustCompile(`(?i)secret|password|token|credential`)

// schemaPath is where the schema validator's message places a failure.
var schemaPath = regexp.MustCompile(`at '(/[^']*)'`)

// firstValue is the dotted path of the first value msg names.
func firstValue(msg string) string {
	m := schemaPath.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(strings.TrimPrefix(m[1], "/"), "/", ".")
}

// decode decodes one rendered manifest; one of only comments (a false
// condition beneath a licence header) is no object, as for Helm.
func decode(doc []byte) (client.Object, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("rendered object: %w", err)
	}
	if string(j) == "null" {
		return nil, nil
	}
	obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(j, nil, nil)
	if err == nil {
		co, ok := obj.(client.Object)
		if !ok {
			return nil, fmt.Errorf("rendered %s is not an object", gvk)
		}
		co.GetObjectKind().SetGroupVersionKind(*gvk)
		return co, nil
	}
	if !runtime.IsNotRegisteredError(err) {
		return nil, fmt.Errorf("rendered object: %w", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		return nil, fmt.Errorf("rendered object: %w", err)
	}
	return u, nil
}
