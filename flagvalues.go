package main

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/units"
)

// durationValue is a duration flag that takes days too (--history 7d).
type durationValue struct{ p *time.Duration }

func (d durationValue) String() string { return d.p.String() }
func (d durationValue) Type() string   { return "duration" }
func (d durationValue) Set(s string) error {
	v, err := units.ParseDuration(s)
	if err != nil {
		return err
	}
	*d.p = v
	return nil
}

// percentValue is a percentage flag that takes "80" and "80%".
type percentValue struct{ p *float64 }

func (v percentValue) String() string { return strconv.FormatFloat(*v.p, 'g', -1, 64) }
func (v percentValue) Type() string   { return "float64" }
func (v percentValue) Set(s string) error {
	f, err := units.ParsePercent(s)
	if err != nil {
		return err
	}
	*v.p = f
	return nil
}

// percentFlags are the flags that hold a percentage.
var percentFlags = map[string]bool{"warn": true, "crit": true, "max-util": true, "idle-below": true}

// userValues makes fs's duration flags take days and its percentages a
// % sign: pflag's own values are swapped for ours over the same variables.
func userValues(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		switch t := f.Value.Type(); {
		case t == "duration":
			if _, ok := f.Value.(durationValue); !ok {
				f.Value = durationValue{(*time.Duration)(reflect.ValueOf(f.Value).UnsafePointer())}
			}
		case t == "float64" && percentFlags[f.Name]:
			if _, ok := f.Value.(percentValue); !ok {
				f.Value = percentValue{(*float64)(reflect.ValueOf(f.Value).UnsafePointer())}
			}
		}
	})
}

// flagError is a parse error in the user's words: the flag, the value and
// the form the flag takes; never the text of strconv or time.
func flagError(err error) string {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		f := bad.GetFlag()
		return fmt.Sprintf("--%s %q: %s", f.Name, bad.GetValue(), flagForm(f, errors.Unwrap(bad)))
	}
	return err.Error()
}

// flagForm says what f takes.
func flagForm(f *pflag.Flag, cause error) string {
	switch f.Value.(type) {
	case durationValue, percentValue:
		return cause.Error()
	}
	switch f.Value.Type() {
	case "int", "int64", "uint", "uint32", "uint64":
		return "want a whole number, as 2"
	case "float64":
		return "want a number, as 2.5"
	case "bool":
		return "want true or false"
	case "duration":
		return units.ErrDuration.Error()
	}
	// A value of our own says what it takes.
	return cause.Error()
}
