// Shared by the GUI tests: where the build is, recording a sample program with the built CLI, and
// a tree as the program's own collapsed stacks.
#pragma once

#include <QProcess>
#include <QSignalSpy>
#include <QString>
#include <QStringList>
#include <QtTest>

#include <set>
#include <string>

#include "analyzer/call_tree.h"
#include "analyzer/tree_diff.h"
#include "gui/document.h"

namespace memledger::gui::testing {

inline const QString kBuild = MEMLEDGER_BINARY_DIR;

// Records build/samples/<sample> with its arguments into `out` (compressed); false on failure.
inline bool recordSample(const QString& sample, const QString& out, const QStringList& programArgs = {}) {
  QProcess p;
  p.start(kBuild + "/bin/memledger", QStringList{"record", "-o", out, "--force", "--", kBuild + "/samples/" + sample} + programArgs);
  return p.waitForFinished(120000) && p.exitCode() == 0;
}

// The collapsed stacks of a tree from `main` outwards (the C runtime's entry frames above main
// differ between libcs), only the lines of the program's own functions in `keep`; `changes`: of
// a B − A tree (signed, every line that is not 0).
inline std::set<std::string> programStacks(const analyzer::CallTree& tree, analyzer::TreeMetric metric,
                                           const std::set<std::string>& keep, bool changes = false) {
  std::set<std::string> out;
  for (std::string line : changes ? analyzer::collapsedChanges(tree, metric) : analyzer::collapsedStacks(tree, metric)) {
    auto at = line.rfind(";main;", line.find(' '));
    if (line.rfind("main;", 0) != 0) {
      if (at == std::string::npos) continue;
      line = line.substr(at + 1);
    }
    std::string second = line.substr(5, line.find_first_of("; ", 5) - 5);
    if (keep.count(second)) out.insert(line);
  }
  return out;
}

// Waits until the document has published a range (or failed); false on failure or timeout.
inline bool waitRange(Document& doc) {
  QSignalSpy range(&doc, &Document::rangeChanged), failed(&doc, &Document::failed);
  return QTest::qWaitFor([&] { return range.count() > 0 || failed.count() > 0; }, 60000) && failed.isEmpty();
}

}  // namespace memledger::gui::testing
