# SPDX-License-Identifier: Apache-2.0
#
# The daemon ringcached: node.c (config table, lifecycle, workers, fills),
# node_conn.c (connections, protocol), node_put.c (write-through), composed by
# ringcached.c. The node is a static library so tests can drive it.
if(NOT TARGET ringcache_config)
  include(${CMAKE_CURRENT_LIST_DIR}/support.cmake)
endif()
if(TARGET ringcache_tenants AND TARGET ringcache_admin)
  add_library(ringcache_node STATIC
    node.c node_conf.c node_metrics.c node_worker.c node_fill.c node_conn.c node_req.c node_upload.c)
  target_include_directories(ringcache_node PUBLIC ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(ringcache_node
    PUBLIC ringcache_blockstore ringcache_config ringcache_metrics ringcache_admin
           ringcache_tenants ringcache_s3 ringcache_cacheconn ringcache_membership
           ringcache_ring ringcache_blockkey PkgConfig::EVENT PkgConfig::EVENT_PTHREADS
    PRIVATE PkgConfig::EVENT_OPENSSL PkgConfig::SSL PkgConfig::CRYPTO ringcache_warnings)
  # the version `ringcached --version` and ringcached_build_info say: the project's
  target_compile_definitions(ringcache_node PRIVATE RINGCACHE_VERSION="${PROJECT_VERSION}")
  add_executable(ringcached ringcached.c)
  target_link_libraries(ringcached PRIVATE ringcache_node ringcache_warnings)
endif()
