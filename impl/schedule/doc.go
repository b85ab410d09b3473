// Package schedule parses the schedule formats of the API and computes their
// next run in UTC: Canton's Quartz-style pruning cron, the Kubernetes CronJob
// schedule of backups, and the d/h/m/s durations of pruning.
//
// Every error it returns describes a bad input and can be shown to the API
// user as-is.
package schedule
