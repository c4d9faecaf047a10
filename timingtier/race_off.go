//go:build !race

package timingtier

const race = false
