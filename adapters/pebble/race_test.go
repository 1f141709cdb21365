//go:build race

package pebble_test

const raceOn = true
