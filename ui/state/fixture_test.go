package state

import "time"

// fixedStart is the tests' clock: the same instant as package ui's tests.
var fixedStart = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
