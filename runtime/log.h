/* Logging to stderr (journald picks it up under systemd). */
#ifndef BUREAU_LOG_H
#define BUREAU_LOG_H

enum bd_log_level { BD_LOG_ERROR, BD_LOG_WARN, BD_LOG_INFO, BD_LOG_DEBUG };

extern enum bd_log_level bd_log_level;

/* Parse "error", "warn", "info" or "debug". */
int bd_log_parse(const char *s, enum bd_log_level *out);
void bd_log(enum bd_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define bd_error(...) bd_log(BD_LOG_ERROR, __VA_ARGS__)
#define bd_warn(...)  bd_log(BD_LOG_WARN, __VA_ARGS__)
#define bd_info(...)  bd_log(BD_LOG_INFO, __VA_ARGS__)
#define bd_debug(...) bd_log(BD_LOG_DEBUG, __VA_ARGS__)

#endif
