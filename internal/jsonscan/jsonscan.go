// Package jsonscan holds the one piece of JSON scanning that the
// recorder's line check and the fleet's decoder of Prometheus answers
// share: finding where a string ends without decoding it.
package jsonscan

import "bytes"

// ClosingQuote is the index of the quote that ends the string whose text
// starts at b[from] (just after its opening quote), or -1 where it does not
// end: a quote after an odd run of backslashes is part of the string.
func ClosingQuote(b []byte, from int) int {
	for i := from; i < len(b); {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		q := i + j
		k := q
		for k > from && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q
		}
		i = q + 1
	}
	return -1
}
