// Package tui holds the bubbletea application behind `qk top`: brokers and
// partitions with leader, ISR, HW and LEO. (Arrives with the TUI issue.)
package tui
