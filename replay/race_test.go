//go:build race

package replay

func init() { raceEnabled = true }
