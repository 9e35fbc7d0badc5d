-- expect-stdout: child finished after main returned
-- `lutra` waits for the processes still running when the main script returns: the
-- child joins the main process, so it prints only once the main script has returned.
lutra.spawn(function(main)
  main:join()
  print("child finished after main returned")
end, lutra.self())
