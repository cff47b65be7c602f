# SPDX-License-Identifier: Apache-2.0
#
# cached/support.cmake: the daemon's supporting modules, each a small static
# library with its own public header, included from cached/CMakeLists.txt:
#   ringcache_config   config.h   table-driven options: file, flags, --help, effective config
#   ringcache_metrics  metrics.h  per-thread counters, gauges, histograms; Prometheus text
#   ringcache_admin    admin.h    admin HTTP server (/metrics /healthz /readyz /config), own thread
#   ringcache_tenants  tenants.h  tenants file: tokens, allowed bucket prefixes, S3 credentials
# Their tests are in tests/unit/{config,metrics,admin,tenants}/, their fuzz
# targets in tests/fuzz/{config,tenants}/.

include_guard(GLOBAL)
set(_rc_support_dir ${CMAKE_CURRENT_LIST_DIR})

add_library(ringcache_config STATIC ${_rc_support_dir}/config.c)
target_include_directories(ringcache_config PUBLIC ${_rc_support_dir})
target_link_libraries(ringcache_config PRIVATE ringcache_bytesize ringcache_warnings)

add_library(ringcache_metrics STATIC ${_rc_support_dir}/metrics.c)
target_include_directories(ringcache_metrics PUBLIC ${_rc_support_dir})
target_link_libraries(ringcache_metrics PUBLIC Threads::Threads PRIVATE ringcache_warnings)

if(EXISTS ${_rc_support_dir}/admin.c)
  # HTTPS on the admin port: libevent's OpenSSL bufferevents and libssl.
  pkg_check_modules(RC_ADMIN_TLS REQUIRED IMPORTED_TARGET libevent_openssl libssl)
  add_library(ringcache_admin STATIC ${_rc_support_dir}/admin.c)
  target_include_directories(ringcache_admin PUBLIC ${_rc_support_dir})
  target_link_libraries(ringcache_admin
    PUBLIC ringcache_metrics
    PRIVATE ringcache_config PkgConfig::EVENT PkgConfig::RC_ADMIN_TLS Threads::Threads ringcache_warnings)
endif()

if(EXISTS ${_rc_support_dir}/tenants.c)
  add_library(ringcache_tenants STATIC ${_rc_support_dir}/tenants.c)
  target_include_directories(ringcache_tenants PUBLIC ${_rc_support_dir})
  target_link_libraries(ringcache_tenants PRIVATE ringcache_config PkgConfig::CRYPTO ringcache_warnings)
endif()
