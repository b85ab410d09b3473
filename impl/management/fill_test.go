package management

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/managementapi"
)

// fill sets every field reachable from v (a pointer) to a value derived
// from its JSON path: strings to the path, booleans to true, integers to
// the path's length, one element in every list, every optional present.
// A field the contract adds later is then set too, so a mapping that
// forgets it loses a value the tests see.
func fill(v any) {
	fillValue(reflect.ValueOf(v).Elem(), "")
}

var timeType = reflect.TypeOf(time.Time{})

func fillValue(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(len(path)))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillValue(p.Elem(), path)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillValue(s.Index(0), path+".0")
		v.Set(s)
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 23, 4, 5, 6, 0, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				name = f.Name
			}
			if path != "" {
				name = path + "." + name
			}
			fillValue(v.Field(i), name)
		}
	default:
		panic("fill: unsupported kind " + v.Kind().String() + " at " + path)
	}
}

var (
	resourcesType = reflect.TypeOf(managementapi.ResourcesDto{})
	volumesType   = reflect.TypeOf([]managementapi.Volume{})
)

// fillKubernetes makes what fill set in v Kubernetes values: each
// quantity a quantity derived from its path's length (in its canonical
// form), and the one volume of a list five volumes of one source each.
func fillKubernetes(v any) {
	fillKubernetesValue(reflect.ValueOf(v).Elem(), "")
}

func fillKubernetesValue(v reflect.Value, path string) {
	switch {
	case v.Type() == resourcesType:
		r := v.Addr().Interface().(*managementapi.ResourcesDto)
		r.CpuLimit, r.CpuRequested = ptr.To(fmt.Sprintf("%dm", len(path))), ptr.To(fmt.Sprintf("%dm", len(path)+1))
		r.MemoryLimit, r.MemoryRequested = ptr.To(fmt.Sprintf("%dMi", len(path))), ptr.To(fmt.Sprintf("%dMi", len(path)+1))
	case v.Type() == volumesType && v.Len() == 1:
		one := v.Index(0).Interface().(managementapi.Volume)
		one.EmptyDir.SizeLimit = &managementapi.SizeLimit{Amount: ptr.To("1"), Format: ptr.To("Gi")}
		vols := []managementapi.Volume{
			{Name: one.Name, ConfigMap: one.ConfigMap},
			{Name: ptr.To(*one.Name + "-1"), Secret: one.Secret},
			{Name: ptr.To(*one.Name + "-2"), EmptyDir: one.EmptyDir},
			{Name: ptr.To(*one.Name + "-3"), HostPath: one.HostPath},
			{Name: ptr.To(*one.Name + "-4"), PersistentVolumeClaim: one.PersistentVolumeClaim},
		}
		v.Set(reflect.ValueOf(vols))
	case v.Kind() == reflect.Pointer && !v.IsNil():
		fillKubernetesValue(v.Elem(), path)
	case v.Kind() == reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			fillKubernetesValue(v.Index(i), path+"."+fmt.Sprint(i))
		}
	case v.Kind() == reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() {
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				fillKubernetesValue(v.Field(i), strings.TrimPrefix(path+"."+name, "."))
			}
		}
	}
}
