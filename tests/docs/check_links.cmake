# Checks that every relative link in README.md and docs/**/*.md names a file or folder that exists.
#   cmake [-DGOOPT_SOURCE_DIR=<repository root>] -P tests/docs/check_links.cmake
# A link is [text](target) or a reference definition "[label]: target", outside fenced code blocks
# and inline code. Not checked: http://, https:// and mailto: links, and pure #anchor links; a
# target's #fragment is dropped and only its file is checked. A target is relative to the file that
# holds it, or to the repository root when it starts with "/". Fails, naming file, line and link,
# when any target is missing. Only cmake is needed (no python on a fresh machine).
cmake_minimum_required(VERSION 3.21)

if(NOT DEFINED GOOPT_SOURCE_DIR)
  get_filename_component(GOOPT_SOURCE_DIR "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
endif()
if(NOT EXISTS "${GOOPT_SOURCE_DIR}/README.md")
  message(FATAL_ERROR "check_links: ${GOOPT_SOURCE_DIR}/README.md does not exist (set -DGOOPT_SOURCE_DIR)")
endif()

file(GLOB_RECURSE doc_pages LIST_DIRECTORIES false RELATIVE "${GOOPT_SOURCE_DIR}"
     "${GOOPT_SOURCE_DIR}/docs/*.md")
list(SORT doc_pages)
set(pages README.md ${doc_pages})

# Lines become list elements: ';' and the brackets (which group list elements) are replaced by
# control characters first, so that no line can merge with the next.
string(ASCII 1 lb)
string(ASCII 2 rb)
string(ASCII 3 sc)

set(broken "")
set(checked 0)
foreach(page IN LISTS pages)
  get_filename_component(page_dir "${GOOPT_SOURCE_DIR}/${page}" DIRECTORY)
  file(READ "${GOOPT_SOURCE_DIR}/${page}" text)
  string(REPLACE ";" "${sc}" text "${text}")
  string(REPLACE "[" "${lb}" text "${text}")
  string(REPLACE "]" "${rb}" text "${text}")
  string(REPLACE "\r" "" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")

  # The prose of the page, one "<line number>:<line>" entry per line outside fenced code blocks,
  # inline code removed; a link whose text wraps onto the next line is joined with it below.
  set(fence "")
  set(number 0)
  set(prose "")
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(line MATCHES "^ *(```+|~~~+)")
      string(SUBSTRING "${CMAKE_MATCH_1}" 0 3 marker)
      if(fence STREQUAL "")
        set(fence "${marker}")
      elseif(fence STREQUAL marker)
        set(fence "")
      endif()
      continue()
    endif()
    if(NOT fence STREQUAL "")
      continue()
    endif()
    string(REGEX REPLACE "`[^`]*`" "" line "${line}")
    list(APPEND prose "${number}:${line}")
  endforeach()

  set(pending "")  # an unclosed "[text" at the end of the line before: a link text may wrap once
  foreach(entry IN LISTS prose)
    string(REGEX MATCH "^[0-9]+" number "${entry}")
    string(REGEX REPLACE "^[0-9]+:" "" raw "${entry}")
    if(pending STREQUAL "")
      set(line "${raw}")
    else()
      set(line "${pending} ${raw}")
      set(pending "")
    endif()
    if(raw MATCHES "${lb}[^${rb}]*$")
      string(REGEX REPLACE "^.*(${lb}[^${rb}]*)$" "\\1" pending "${raw}")
    endif()

    set(targets "")
    # [text](target) and ![alt](target)
    string(REGEX MATCHALL "${lb}[^${lb}${rb}]*${rb}\\([^)]*\\)" links "${line}")
    foreach(link IN LISTS links)
      string(REGEX REPLACE "^${lb}[^${lb}${rb}]*${rb}\\(([^)]*)\\)$" "\\1" target "${link}")
      list(APPEND targets "${target}")
    endforeach()
    # [label]: target
    if(line MATCHES "^ ? ? ?${lb}[^${lb}${rb}]+${rb}: *([^ ]+)")
      list(APPEND targets "${CMAKE_MATCH_1}")
    endif()

    foreach(target IN LISTS targets)
      string(STRIP "${target}" target)
      string(REGEX REPLACE "^<([^>]*)>.*$" "\\1" target "${target}")  # <target> "title"
      string(REGEX REPLACE " .*$" "" target "${target}")               # target "title"
      if(target STREQUAL "" OR target MATCHES "^#" OR target MATCHES "^(https?|mailto):")
        continue()
      endif()
      string(REGEX REPLACE "#.*$" "" path "${target}")
      string(REPLACE "%20" " " path "${path}")
      string(REPLACE "${lb}" "[" path "${path}")
      string(REPLACE "${rb}" "]" path "${path}")
      string(REPLACE "${sc}" ";" path "${path}")
      if(path MATCHES "^/")
        set(resolved "${GOOPT_SOURCE_DIR}${path}")
      else()
        set(resolved "${page_dir}/${path}")
      endif()
      math(EXPR checked "${checked} + 1")
      if(NOT EXISTS "${resolved}")
        list(APPEND broken "${page}:${number}: link '${target}' names no file or folder")
      endif()
    endforeach()
  endforeach()
endforeach()

list(LENGTH pages page_count)
list(LENGTH broken broken_count)
if(broken_count GREATER 0)
  string(REPLACE ";" "\n  " listing "${broken}")
  string(REPLACE "${lb}" "[" listing "${listing}")
  string(REPLACE "${rb}" "]" listing "${listing}")
  string(REPLACE "${sc}" ";" listing "${listing}")
  message(FATAL_ERROR "check_links: ${broken_count} broken relative link(s) in README.md and docs/:\n  ${listing}")
endif()
message(STATUS "check_links: ${checked} relative links in ${page_count} files, all resolve")
