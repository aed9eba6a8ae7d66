# Maps a fresh 13 MiB file four ways (advice or not; pages from the write or read cold after
# POSIX_FADV_DONTNEED) and prints FilePmdMapped from /proc/self/smaps: whether the file's
# pages are mapped with 2 MiB entries.
import mmap, os, sys, re
def pmd(addr_lo, addr_hi):
    tot=0; cur=None
    for line in open('/proc/self/smaps'):
        m=re.match(r'^([0-9a-f]+)-([0-9a-f]+) ', line)
        if m:
            lo,hi=int(m.group(1),16),int(m.group(2),16); cur=(lo<addr_hi and hi>addr_lo)
        elif cur and line.startswith('FilePmdMapped:'):
            tot+=int(line.split()[1])
    return tot
def trial(name, advise, dropcache):
    path=f'thp-{name}.bin'
    with open(path,'wb') as f: f.write(os.urandom(13<<20))
    fd=os.open(path, os.O_RDONLY)
    if dropcache:
        os.fsync(fd); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)
    m=mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    if advise: m.madvise(mmap.MADV_HUGEPAGE)
    s=0
    for off in range(0,len(m),4096): s+=m[off]
    # find the mapping's address through /proc/self/maps by path
    for line in open('/proc/self/maps'):
        if path in line:
            lo,hi=[int(x,16) for x in line.split()[0].split('-')]
            print(name, 'advise' if advise else 'no-advice', 'fresh-read' if dropcache else 'after-write', 'FilePmdMapped kB', pmd(lo,hi), 'of', (hi-lo)>>10, 'map at 2MiB-aligned' if lo%(2<<20)==0 else 'map not aligned')
    m.close(); os.close(fd); os.remove(path)
trial('a',False,False); trial('b',True,False); trial('c',False,True); trial('d',True,True)
