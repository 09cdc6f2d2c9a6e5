package redundancy

// Exported for the external test package.
var ReportVsMemcopy = reportVsMemcopy
