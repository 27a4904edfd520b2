// Package lambda runs the batch-drain job as an AWS Lambda function (aws-lambda-go):
// a scheduled EventBridge event invokes it, it drains until shortly before the
// invocation's deadline, and answers the job's summary as the function result.
//
// It is the only package that imports aws-lambda-go; outside Lambda the same job runs
// once as a command (cmd/lambda, binary queen-drain).
package lambda
