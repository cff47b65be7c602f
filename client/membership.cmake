# SPDX-License-Identifier: Apache-2.0
#
# Membership sources (static list, file, DNS of a headless Service) feeding the
# ring: the static library ringcache_membership. Included from
# client/CMakeLists.txt.

add_library(ringcache_membership STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/membership.c
  ${CMAKE_CURRENT_SOURCE_DIR}/membership_parse.c
  ${CMAKE_CURRENT_SOURCE_DIR}/membership_dns.c
  ${CMAKE_CURRENT_SOURCE_DIR}/membership_dnsmsg.c)
target_include_directories(ringcache_membership PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(ringcache_membership
  PUBLIC ringcache_ring PkgConfig::EVENT
  PRIVATE ringcache_warnings)
