package recorder

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/vramtop/vramtop/internal/jsonscan"
)

// The devices and processes of a line are decoded through the field
// tables: encoding/json hands each one's object, checked whole as JSON
// already, to its UnmarshalJSON, which walks it here.

var errNotObject = errors.New("want an object")

// valueEnd is the index just past the JSON value that starts at b[i].
func valueEnd(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("a value is missing")
	}
	switch b[i] {
	case '"':
		j := jsonscan.ClosingQuote(b, i+1)
		if j < 0 {
			return 0, errors.New("a string is not closed")
		}
		return j + 1, nil
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				j := jsonscan.ClosingQuote(b, i+1)
				if j < 0 {
					return 0, errors.New("a string is not closed")
				}
				i = j
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errors.New("brackets do not match")
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i, nil
		}
	}
	return i, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// members calls fn with the name and the value of each member of the JSON
// object b. A name is unquoted; a null value is left out (as
// encoding/json leaves the field as it is).
func members(b []byte, fn func(key, v []byte) error) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errNotObject
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for {
		end, err := valueEnd(b, i)
		if err != nil {
			return err
		}
		if b[i] != '"' {
			return errors.New("want a member's name")
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var name string
			if err := json.Unmarshal(b[i:end], &name); err != nil {
				return err
			}
			key = []byte(name)
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return errors.New("want : after a member's name")
		}
		i = skipSpace(b, i+1)
		if end, err = valueEnd(b, i); err != nil {
			return err
		}
		if v := b[i:end]; string(v) != "null" {
			if err := fn(key, v); err != nil {
				return err
			}
		}
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return nil
		}
		return errors.New("want , or } in an object")
	}
}

// elements calls fn with each element of the JSON list b.
func elements(b []byte, fn func(v []byte) error) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return errors.New("want a list")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil
	}
	for {
		end, err := valueEnd(b, i)
		if err != nil {
			return err
		}
		if err := fn(b[i:end]); err != nil {
			return err
		}
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return nil
		}
		return errors.New("want , or ] in a list")
	}
}

// count is the number of elements of the JSON list b (0 where it is not
// one): for sizing what they decode into.
func count(b []byte) int {
	n := 0
	if elements(b, func([]byte) error { n++; return nil }) != nil {
		return 0
	}
	return n
}
