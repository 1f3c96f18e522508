package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/qk-project/qk/internal/javafmt"
)

// The typed structs (Broker, Topic) name their settings with a
// `config:"name"` tag, and these helpers move values between the registry's
// strings and those fields. They parse with Key.Parse, that is with
// Kafka's rules (decimal only, trimmed, Java int ranges); a generic decoder
// such as mapstructure's weak typing reads "010" as octal 8.

// fieldIndex maps a struct type's tags to field indexes.
var fieldIndex sync.Map // reflect.Type -> map[string]int

func tagged(t reflect.Type) map[string]int {
	if m, ok := fieldIndex.Load(t); ok {
		return m.(map[string]int)
	}
	m := map[string]int{}
	for i := range t.NumField() {
		if name := t.Field(i).Tag.Get("config"); name != "" && name != "-" {
			m[name] = i
		}
	}
	fieldIndex.Store(t, m)
	return m
}

// bindFields sets every tagged field of *dst from get, which returns a
// setting's raw value or false when it is null (the field is then zero).
func bindFields(dst any, keys map[string]*Key, get func(string) (string, bool)) error {
	rv := reflect.ValueOf(dst).Elem()
	for name, i := range tagged(rv.Type()) {
		f := rv.Field(i)
		raw, ok := get(name)
		if !ok {
			f.SetZero()
			continue
		}
		v, err := keys[name].Parse(raw)
		if err != nil {
			return err
		}
		if err := setField(f, v); err != nil {
			return fmt.Errorf("config: field for %s: %w", name, err)
		}
	}
	return nil
}

// setTagged sets the field tagged name of *dst to the parsed value v.
func setTagged(dst any, name string, v any) error {
	rv := reflect.ValueOf(dst).Elem()
	i, ok := tagged(rv.Type())[name]
	if !ok {
		return fmt.Errorf("config: no field for %s", name)
	}
	return setField(rv.Field(i), v)
}

func setField(f reflect.Value, v any) error {
	if f.Type() == reflect.TypeFor[CleanupPolicy]() {
		f.Set(reflect.ValueOf(newCleanupPolicy(v.([]string))))
		return nil
	}
	switch f.Kind() {
	case reflect.Bool:
		f.SetBool(v.(bool))
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
		f.SetInt(toInt64(v))
	case reflect.Float64:
		f.SetFloat(v.(float64))
	case reflect.String:
		f.SetString(v.(string))
	case reflect.Slice:
		s := v.([]string)
		f.Set(reflect.ValueOf(append([]string(nil), s...)))
	default:
		return fmt.Errorf("unsupported field kind %s", f.Kind())
	}
	return nil
}

// formatTagged returns the field tagged name of src in normalized string
// form.
func formatTagged(src any, name string) (string, bool) {
	rv := reflect.ValueOf(src)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	i, ok := tagged(rv.Type())[name]
	if !ok {
		return "", false
	}
	f := rv.Field(i)
	if p, ok := f.Interface().(CleanupPolicy); ok {
		return p.String(), true
	}
	switch f.Kind() {
	case reflect.Bool:
		return strconv.FormatBool(f.Bool()), true
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(f.Int(), 10), true
	case reflect.Float64:
		return javafmt.Double(f.Float()), true
	case reflect.String:
		return f.String(), true
	case reflect.Slice:
		return strings.Join(f.Interface().([]string), ","), true
	}
	return "", false
}
