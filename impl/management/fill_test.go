package management

import (
	"reflect"
	"strings"
	"time"
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
