# Seed 002's word count on Ruby Ractors, the same work as bench/lua/word_count.lua: for
# each file, the number of distinct upper-cased words (split on non-word characters);
# report the file with the most. Mapper Ractors take file names from the main Ractor
# in turn; mode "serial" does the same in a plain loop.
#   ruby word_count.rb hub|serial MAPPERS FILE...
Warning[:experimental] = false if Warning.respond_to?(:[]=)

def distinct_words(path)
  File.binread(path).upcase.scan(/\w+/).uniq.size
end

mode = ARGV[0] || "hub"
mappers = Integer(ARGV[1] || 2)
files = ARGV.drop(2)

counts =
  if mode == "serial"
    files.map { |path| [path, distinct_words(path)] }
  else
    main = Ractor.current
    procs = Array.new(mappers) do
      Ractor.new(main) do |results|
        while (path = Ractor.receive) != :stop
          results.send([path, distinct_words(path)])
        end
      end
    end
    files.each_with_index { |path, i| procs[i % mappers].send(path) }
    procs.each { |p| p.send(:stop) }
    result = Array.new(files.size) { Ractor.receive }
    procs.each { |p| p.respond_to?(:join) ? p.join : p.take }
    result
  end
total = counts.sum { |_, count| count }
best, best_count = counts.min_by { |path, count| [-count, path] }
puts format("word_count: ok %d files, %d distinct in total, max %d in %s",
            files.size, total, best_count, File.basename(best))
